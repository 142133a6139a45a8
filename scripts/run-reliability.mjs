#!/usr/bin/env node
// `npm run test:reliability`: the long-running reliability tests (test/reliability/*.reliability.ts,
// which `npm test` does not run), one file at a time, then the figures each left in
// test/artifacts/reliability/. Arguments narrow the run to files whose path contains any of them.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";

const dir = join("test", "reliability");
const figuresDir = join("test", "artifacts", "reliability");
const filters = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((name) => name.endsWith(".reliability.ts"))
  .map((name) => join(dir, name))
  .filter((file) => filters.length === 0 || filters.some((s) => file.includes(s)))
  .sort();
if (files.length === 0) {
  console.error("no reliability test files matched");
  process.exit(1);
}
rmSync(figuresDir, { recursive: true, force: true });
const result = spawnSync(
  process.execPath,
  ["--import", "tsx", "--test", "--test-concurrency=1", "--test-timeout=1800000", ...files],
  // The service refuses to start without the LangChain setting bin/agenthost exports (src/config/langchain-environment.ts).
  { stdio: "inherit", env: { ...process.env, LANGCHAIN_CALLBACKS_BACKGROUND: "false" } },
);

console.log("\n== reliability figures ==");
if (existsSync(figuresDir)) {
  for (const name of readdirSync(figuresDir).filter((n) => n.endsWith(".json")).sort()) {
    const figures = JSON.parse(readFileSync(join(figuresDir, name), "utf8"));
    console.log(`\n${figures.title}`);
    for (const line of figures.lines ?? []) console.log(`  ${line}`);
  }
} else {
  console.log("(no figures recorded)");
}
process.exit(result.status ?? 1);
