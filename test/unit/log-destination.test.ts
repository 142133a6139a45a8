// Stdout's log lines against their reader: the lines pending at exit are written, and a process
// whose reader has gone (a log collector that died) still exits when told to, at once. Real child
// processes over real pipes.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import path from "node:path";
import { test, type TestContext } from "node:test";

const ROOT = path.resolve(import.meta.dirname, "../..");
const CHILD = path.join(ROOT, "test/fixtures/log-then-exit.ts");

/** Bound of a test that fails by hanging: the child is killed after it. */
const HANG_MS = 60_000;

function start(t: TestContext, lines: number) {
  const child = spawn(process.execPath, ["--import", "tsx", CHILD], { cwd: ROOT, env: { ...process.env, LINES: String(lines) }, stdio: ["pipe", "pipe", "pipe"] });
  const exited = once(child, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  return { child, exited };
}

test("the lines logged just before an exit are written: the exit flushes them", { timeout: HANG_MS }, async (t) => {
  const { child, exited } = start(t, 3);
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    if (!out) child.stdin.end();
    out += chunk;
  });
  const [code] = await exited;
  assert.equal(code, 0);
  const messages = out.trim().split("\n").map((line) => (JSON.parse(line) as { msg: string }).msg);
  assert.deepEqual(messages, ["ready", "exiting", "exiting", "exiting"]);
});

for (const lines of [1, 100]) {
  test(`a process whose stdout reader is gone exits at once when told to, logging ${lines} line(s) on its way out`, { timeout: HANG_MS }, async (t) => {
    const { child, exited } = start(t, lines);
    // The reader goes, and in the same tick the process is told to exit: it exits before any
    // batched write could notice the broken pipe. pino's own destination waited for the reader
    // forever here (retrying the exit's write every 100 ms).
    child.stdout.once("data", () => {
      child.stdout.destroy();
      child.stdin.end();
    });
    const [code, signal] = await exited;
    assert.deepEqual([code, signal], [0, null]);
  });
}
