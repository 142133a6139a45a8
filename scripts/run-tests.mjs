#!/usr/bin/env node
// Runs the test suite with Node's own runner. Node 20 neither expands globs nor finds .ts files,
// so this lists them. Arguments narrow the run to files whose path contains any of them.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";

function find(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === "artifacts" || entry.name === "fixtures" ? [] : find(path);
    return entry.name.endsWith(".test.ts") ? [path] : [];
  });
}

const filters = process.argv.slice(2);
const files = find("test").filter((f) => filters.length === 0 || filters.some((s) => f.includes(s))).sort();
if (files.length === 0) {
  console.error("no test files matched");
  process.exit(1);
}
const concurrency = process.env.TEST_CONCURRENCY ?? "2";
const result = spawnSync(
  process.execPath,
  ["--import", "tsx", "--test", `--test-concurrency=${concurrency}`, "--test-timeout=120000", ...files],
  // The service refuses to start without the LangChain setting bin/agenthost exports (src/config/langchain-environment.ts).
  { stdio: "inherit", env: { ...process.env, LANGCHAIN_CALLBACKS_BACKGROUND: "false" } },
);
process.exit(result.status ?? 1);
