#!/usr/bin/env node
// `npm run build`: compile src/ and workers/ to dist/ (ESM JavaScript, source maps, declarations)
// with tsconfig.build.json, copy the chat page's static files, and stamp the build's start time so
// bin/ can tell a current dist/ from a stale one. `--if-stale` (used by `npm start`) does nothing
// when dist/ is already current. Type errors fail the build.
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { BUILD_STAMP, PACKAGE_ROOT, distIsCurrent } from "../bin/lib/entry-point.js";

if (process.argv.includes("--if-stale") && distIsCurrent()) process.exit(0);

const startedAt = Date.now();
const dist = path.join(PACKAGE_ROOT, "dist");
process.stderr.write("agenthost: compiling to dist/ (npm run build)…\n");
rmSync(dist, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
const result = spawnSync(process.execPath, [tsc, "-p", path.join(PACKAGE_ROOT, "tsconfig.build.json")], { stdio: "inherit" });
if (result.status !== 0) {
  rmSync(dist, { recursive: true, force: true });
  process.exit(result.status ?? 1);
}
cpSync(path.join(PACKAGE_ROOT, "src/ui/public"), path.join(dist, "src/ui/public"), { recursive: true });
mkdirSync(path.dirname(BUILD_STAMP), { recursive: true });
writeFileSync(BUILD_STAMP, `${JSON.stringify({ startedAt })}\n`);
process.stderr.write(`agenthost: built in ${((Date.now() - startedAt) / 1000).toFixed(1)} s\n`);
