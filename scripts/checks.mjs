#!/usr/bin/env node
// The checks `npm test` runs before the tests: the type check (`tsc --noEmit`), the lint
// (`eslint .`) and the import-cycle and layer check (scripts/check-cycles.mjs), all at once, and
// beside them the build of dist/ when it is stale (`npm run build --if-stale`): the tests start
// bin/agenthost hundreds of times, and a process started from the compiled code takes about half
// the CPU of one that compiles the sources through tsx (1.2 s against 2.3 s for a primary and its
// worker). Each is one process on one core (about 30 s, 50 s, 1 s and 20 s of CPU), so on two
// cores at once they take the lint's time instead of the sum. Each one's output is printed whole,
// in that order, and the exit status is the first non-zero one.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);
/** The script a package names as its command `name` (its package.json `bin`). */
function bin(pkg, name) {
  const manifest = require.resolve(`${pkg}/package.json`);
  const { bin: bins } = JSON.parse(readFileSync(manifest, "utf8"));
  return join(dirname(manifest), typeof bins === "string" ? bins : bins[name]);
}
// Their output goes through a pipe: on a terminal, ask for the colours they would have used there.
const tty = process.stdout.isTTY === true;
const CHECKS = [
  { name: "tsc --noEmit", args: [bin("typescript", "tsc"), "--noEmit", ...(tty ? ["--pretty"] : [])] },
  { name: "eslint .", args: [bin("eslint", "eslint"), "."] },
  { name: "node scripts/check-cycles.mjs", args: ["scripts/check-cycles.mjs"] },
  { name: "node scripts/build.mjs --if-stale", args: ["scripts/build.mjs", "--if-stale"] },
];

const outcomes = CHECKS.map(
  ({ args }) =>
    new Promise((resolve) => {
      const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"], env: tty ? { ...process.env, FORCE_COLOR: "1" } : process.env });
      const output = [];
      child.stdout.on("data", (chunk) => output.push(chunk));
      child.stderr.on("data", (chunk) => output.push(chunk));
      child.on("error", (error) => resolve({ code: 1, output: Buffer.from(`${String(error)}\n`) }));
      child.on("close", (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), output: Buffer.concat(output) }));
    }),
);

let status = 0;
for (const [index, outcome] of outcomes.entries()) {
  const { code, output } = await outcome;
  if (output.length > 0 || code !== 0) process.stdout.write(`> ${CHECKS[index].name}\n`);
  process.stdout.write(output);
  if (code !== 0) process.stdout.write(`${CHECKS[index].name} failed (exit ${code})\n`);
  if (status === 0) status = code;
}
process.exit(status);
