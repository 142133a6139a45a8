// The bounded FIFO wait under admission, the in-process lock and the primary's broker. Deadlines
// run on Node's mock timers, so every step is decided by the test, never by the clock.
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { test } from "node:test";
import { WaitQueue, type WaitOutcome } from "../../src/admission/wait-queue.ts";

/** A wait whose outcome can be read once it has settled, without awaiting it. */
function track(wait: Promise<WaitOutcome>): { outcome: () => WaitOutcome | undefined; done: Promise<WaitOutcome> } {
  let outcome: WaitOutcome | undefined;
  const done = wait.then((value) => (outcome = value));
  return { outcome: () => outcome, done };
}

test("hand-offs go to waiters in arrival order, one per hand-off", async () => {
  const queue = new WaitQueue({ waitMs: 60_000, maxWaiters: 3 });
  const waits = ["first", "second", "third"].map((name) => ({ name, wait: track(queue.wait()) }));
  assert.equal(queue.length, 3);
  const order: string[] = [];
  for (const { name, wait } of waits) void wait.done.then(() => order.push(name));

  assert.equal(queue.handOff(), true);
  assert.equal(queue.length, 2);
  assert.equal(await waits[0]!.wait.done, "granted");
  assert.equal(waits[1]!.wait.outcome(), undefined, "the second still waits");

  assert.equal(queue.handOff(), true);
  assert.equal(queue.handOff(), true);
  assert.equal(queue.length, 0);
  await Promise.all(waits.map((w) => w.wait.done));
  assert.deepEqual(order, ["first", "second", "third"]);
  assert.equal(queue.handOff(), false, "nobody left to hand to");
});

test("the queue is bounded: past maxWaiters a wait is refused at once; waiting off answers busy", async () => {
  const queue = new WaitQueue({ waitMs: 60_000, maxWaiters: 2 });
  const first = queue.wait();
  const second = queue.wait();
  assert.equal(await queue.wait(), "queue_full");
  assert.equal(queue.length, 2, "the refused one never joined");
  queue.handOff();
  assert.equal(await first, "granted");
  // A place freed: the next arrival may queue again.
  const third = queue.wait();
  assert.equal(queue.length, 2);
  queue.handOff();
  queue.handOff();
  assert.deepEqual(await Promise.all([second, third]), ["granted", "granted"]);

  const off = new WaitQueue({ waitMs: 0, maxWaiters: 5 });
  assert.equal(await off.wait(), "busy");
  assert.equal(off.length, 0);
  const none = new WaitQueue({ waitMs: 1_000, maxWaiters: 0 });
  assert.equal(await none.wait(), "queue_full");
});

test("a waiter leaves at its deadline and not before; the others keep their places", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const queue = new WaitQueue({ waitMs: 1_000, maxWaiters: 4 });
  const early = track(queue.wait());
  t.mock.timers.tick(400);
  const late = track(queue.wait());
  t.mock.timers.tick(599);
  await Promise.resolve();
  assert.equal(early.outcome(), undefined, "1 ms before its deadline it still waits");
  assert.equal(queue.length, 2);

  t.mock.timers.tick(1);
  assert.equal(await early.done, "wait_expired");
  assert.equal(queue.length, 1, "the expired waiter is out of the queue");
  assert.equal(queue.handOff(), true);
  assert.equal(await late.done, "granted", "the hand-off skips the expired waiter");
  t.mock.timers.tick(10_000);
  assert.equal(queue.length, 0);
  assert.equal(queue.handOff(), false);
});

test("an aborted waiter leaves at once and keeps no listener; an aborted signal never queues", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const queue = new WaitQueue({ waitMs: 1_000, maxWaiters: 4 });
  const leaving = new AbortController();
  const staying = new AbortController();
  const first = track(queue.wait(leaving.signal));
  const second = track(queue.wait(staying.signal));
  assert.equal(getEventListeners(leaving.signal, "abort").length, 1);

  leaving.abort();
  assert.equal(queue.length, 1, "out of the queue in the same tick");
  assert.equal(await first.done, "aborted");
  assert.equal(getEventListeners(leaving.signal, "abort").length, 0);

  queue.handOff();
  assert.equal(await second.done, "granted");
  assert.equal(getEventListeners(staying.signal, "abort").length, 0, "a granted waiter drops its listener too");

  const gone = new AbortController();
  gone.abort();
  assert.equal(await queue.wait(gone.signal), "aborted");
  assert.equal(queue.length, 0);
  assert.equal(queue.handOff(), false);
});

test("a waiter handed the thing keeps it even if its signal aborts or its deadline passes before it resumes", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const queue = new WaitQueue({ waitMs: 1_000, maxWaiters: 4 });
  const controller = new AbortController();
  const wait = queue.wait(controller.signal);
  queue.handOff();
  controller.abort();
  t.mock.timers.tick(5_000);
  assert.equal(await wait, "granted");
});

test("no waiter is left behind after many expire and abort", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const queue = new WaitQueue({ waitMs: 1_000, maxWaiters: 100 });
  const controllers = Array.from({ length: 50 }, () => new AbortController());
  const waits = controllers.map((c) => queue.wait(c.signal));
  const expiring = Array.from({ length: 50 }, () => queue.wait());
  assert.equal(queue.length, 100);
  controllers.forEach((c, i) => i % 2 === 0 && c.abort());
  assert.equal(queue.length, 75);
  t.mock.timers.tick(1_000);
  assert.equal(queue.length, 0);
  const outcomes = await Promise.all([...waits, ...expiring]);
  assert.equal(outcomes.filter((o) => o === "aborted").length, 25);
  assert.equal(outcomes.filter((o) => o === "wait_expired").length, 75);
  for (const c of controllers) assert.equal(getEventListeners(c.signal, "abort").length, 0);
  assert.equal(queue.handOff(), false);
});
