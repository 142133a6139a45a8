// Runs that become ready in one turn of the event loop start together, in its check phase, and
// their steps interleave; a run that asks in a later turn waits for the next batch.
import assert from "node:assert/strict";
import { test } from "node:test";
import { startTogether } from "../../src/admission/start-together.ts";

test("callers of one turn resume in the check phase, in the order they asked", async () => {
  const log: string[] = [];
  setImmediate(() => log.push("immediate queued first"));
  const callers = ["a", "b", "c"].map((name) => startTogether().then(() => log.push(name)));
  void Promise.resolve().then(() => log.push("microtask"));
  await Promise.all(callers);
  assert.deepEqual(log, ["microtask", "immediate queued first", "a", "b", "c"]);
});

test("their steps interleave: every run's first step, then every run's second", async () => {
  const log: string[] = [];
  const run = async (name: string) => {
    await startTogether();
    log.push(`${name}1`);
    await null;
    log.push(`${name}2`);
  };
  await Promise.all(["a", "b", "c"].map(run));
  assert.deepEqual(log, ["a1", "b1", "c1", "a2", "b2", "c2"]);
});

test("a caller that asks after a batch started waits for the next check phase", async () => {
  const log: string[] = [];
  await Promise.all([
    startTogether().then(async () => {
      log.push("first batch");
      setImmediate(() => log.push("immediate between the batches"));
      await startTogether();
      log.push("second batch");
    }),
    startTogether().then(() => log.push("first batch too")),
  ]);
  assert.deepEqual(log, ["first batch", "first batch too", "immediate between the batches", "second batch"]);
});
