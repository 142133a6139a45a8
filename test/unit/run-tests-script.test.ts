// scripts/run-tests.mjs: its own options, path fragments, and every other flag passed to node --test.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";

function runTests(...args: string[]): { status: number | null; out: string } {
  return runTestsWith({}, ...args);
}

/**
 * The tests that ran (ok, not skipped). Node 20 reports the tests a name pattern leaves out as
 * skipped; Node 23 and later leave them out of the report.
 */
const ran = (out: string) => [...out.matchAll(/^ok \d+ - ((?!.*# SKIP).*)$/gm)].map((match) => match[1]);

function runTestsWith(extraEnv: Record<string, string>, ...args: string[]): { status: number | null; out: string } {
  // Without the runner's NODE_TEST_CONTEXT, the inner `node --test` reports in TAP, not to this runner.
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  const result = spawnSync(process.execPath, ["scripts/run-tests.mjs", "--no-coverage", ...args], { encoding: "utf8", timeout: 60_000, env: { ...env, ...extraEnv } });
  return { status: result.status, out: result.stdout + result.stderr };
}

test("flags it does not own go to node --test: --test-name-pattern picks one test of a file", () => {
  const { status, out } = runTests("test/unit/restart-budget", "--test-name-pattern=backoff stops growing");
  assert.equal(status, 0, out);
  assert.deepEqual(ran(out), ["the backoff stops growing at 10 s"]);
});

test("a flag node --test refuses fails the run instead of being ignored", () => {
  const { status } = runTests("test/unit/restart-budget", "--no-such-node-flag");
  assert.notEqual(status, 0);
});

test("a flag's value may be the next argument: it is the flag's value, not a path fragment", () => {
  const { status, out } = runTests("--test-name-pattern", "backoff stops growing", "test/unit/restart-budget");
  assert.equal(status, 0, out);
  assert.deepEqual(ran(out), ["the backoff stops growing at 10 s"]);
  // A pattern that matches no file name would otherwise narrow the run to nothing, or to every file.
  const short = runTests("--import", "./test/helpers/forbid-langchain.mjs", "--test-name-pattern", "backoff stops growing", "test/unit/restart-budget");
  assert.equal(short.status, 0, short.out);
  assert.match(short.out, /^# pass 1$/m);
});

test("a flag that needs a value and has none is refused, saying how to write it", () => {
  const { status, out } = runTests("test/unit/restart-budget", "--test-name-pattern");
  assert.equal(status, 2, out);
  assert.match(out, /run-tests: --test-name-pattern needs a value: --test-name-pattern=<value> or --test-name-pattern <value>/);
  assert.doesNotMatch(out, /^# pass/m, "nothing ran");
});

test("the packaging and browser files run as a part of their own beside the rest; each part's output is printed whole, in order", () => {
  const { status, out } = runTests("test/packaging/start-rebuilds", "test/unit/restart-budget", "--test-name-pattern=backoff stops growing");
  assert.equal(status, 0, out);
  const side = out.indexOf("# packaging and browser tests: 1 test files\n");
  const rest = out.indexOf("# the rest of these tests: 1 test files\n");
  assert.ok(side >= 0 && rest > side, out);
  const [sidePart, restPart] = [out.slice(side, rest), out.slice(rest)];
  assert.doesNotMatch(sidePart, /backoff|^not ok/m);
  assert.deepEqual(ran(restPart), ["the backoff stops growing at 10 s"]);
  assert.doesNotMatch(restPart, /npm start/);
  assert.equal(out.match(/^# tests \d+$/gm)?.length, 2, "each part ends with its own summary");
  assert.ok(out.indexOf("# tests") > side && out.indexOf("# tests") < rest, "the first part's summary comes before the second part");
});

test("with one file at a time (--test-concurrency=1) the same parts run one after the other", () => {
  const { status, out } = runTests("test/packaging/start-rebuilds", "test/unit/restart-budget", "--test-concurrency=1", "--test-name-pattern=backoff stops growing");
  assert.equal(status, 0, out);
  const side = out.indexOf("# packaging and browser tests: 1 test files\n");
  const rest = out.indexOf("# the rest of these tests: 1 test files\n");
  assert.ok(side >= 0 && rest > side, out);
  assert.match(out.slice(rest), /^ok \d+ - the backoff stops growing at 10 s$/m);
});

test("TEST_CONCURRENCY that is not a whole number of at least 1 is refused", () => {
  for (const value of ["0", "two", "1.5"]) {
    const { status, out } = runTestsWith({ TEST_CONCURRENCY: value }, "test/unit/restart-budget");
    assert.equal(status, 2, out);
    assert.match(out, new RegExp(`run-tests: TEST_CONCURRENCY=${value.replace(".", "\\.")} is not a whole number of at least 1`));
  }
});
