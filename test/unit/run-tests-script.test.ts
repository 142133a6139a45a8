// scripts/run-tests.mjs: its own options, path fragments, and every other flag passed to node --test.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";

function runTests(...args: string[]): { status: number | null; out: string } {
  // Without the runner's NODE_TEST_CONTEXT, the inner `node --test` reports in TAP, not to this runner.
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  const result = spawnSync(process.execPath, ["scripts/run-tests.mjs", "--no-coverage", ...args], { encoding: "utf8", timeout: 60_000, env });
  return { status: result.status, out: result.stdout + result.stderr };
}

test("flags it does not own go to node --test: --test-name-pattern picks one test of a file", () => {
  const { status, out } = runTests("test/unit/restart-budget", "--test-name-pattern=backoff stops growing");
  assert.equal(status, 0, out);
  assert.match(out, /^# pass 1$/m);
  assert.match(out, /^# skipped [1-9]\d*$/m);
});

test("a flag node --test refuses fails the run instead of being ignored", () => {
  const { status } = runTests("test/unit/restart-budget", "--no-such-node-flag");
  assert.notEqual(status, 0);
});
