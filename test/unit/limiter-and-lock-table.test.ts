// The users of the bounded FIFO wait: the request-slot limiter and the per-key lock table (the
// in-process conversation lock and the primary's broker). Ordered by observable state only.
import assert from "node:assert/strict";
import { test } from "node:test";
import { AdmissionLimiter } from "../../src/admission/limiter.ts";
import { KeyedFifoLock } from "../../src/coordination/locks/keyed-fifo-lock.ts";
import { MemoryConversationLock } from "../../src/coordination/locks/memory-lock.ts";

test("limiter: a released slot passes to the oldest waiter; the count never dips in between", async () => {
  const limiter = new AdmissionLimiter(1, 2, 60_000);
  const release = await limiter.acquire();
  assert.ok(release);
  const first = limiter.acquire();
  const second = limiter.acquire();
  assert.equal(limiter.waitingCount, 2);
  assert.equal(await limiter.acquire(), undefined, "a third waiter is refused");

  release();
  release(); // a second call is a no-op
  assert.equal(limiter.activeCount, 1, "the slot was inherited, not freed and retaken");
  assert.equal(limiter.waitingCount, 1);
  const releaseFirst = await first;
  assert.ok(releaseFirst);
  releaseFirst();
  const releaseSecond = await second;
  assert.ok(releaseSecond);
  releaseSecond();
  assert.equal(limiter.activeCount, 0);
  assert.equal(limiter.waitingCount, 0);
});

test("limiter: a waiter that aborts is refused and leaves its place; without a queue, refused at once", async () => {
  const limiter = new AdmissionLimiter(1, 4, 60_000);
  const release = await limiter.acquire();
  assert.ok(release);
  const controller = new AbortController();
  const waiting = limiter.acquire(controller.signal);
  assert.equal(limiter.waitingCount, 1);
  controller.abort();
  assert.equal(await waiting, undefined);
  assert.equal(limiter.waitingCount, 0);
  release();
  assert.equal(limiter.activeCount, 0, "nobody inherited the slot");

  const noQueue = new AdmissionLimiter(1, 4, 0);
  assert.ok(await noQueue.acquire());
  assert.equal(await noQueue.acquire(), undefined);
});

test("lock table: one holder per key, FIFO hand-off, the key forgotten with its last holder", async () => {
  const table = new KeyedFifoLock({ waitMs: 60_000, maxWaiters: 2 });
  assert.deepEqual(await table.acquire("k"), { outcome: "granted", waitedMs: 0 });
  assert.deepEqual(await table.acquire("other"), { outcome: "granted", waitedMs: 0 });
  const first = table.acquire("k");
  const second = table.acquire("k");
  assert.equal(table.waitingFor("k"), 2);
  assert.equal((await table.acquire("k")).outcome, "queue_full");

  table.release("k");
  const granted = await first;
  assert.equal(granted.outcome, "granted");
  assert.ok(granted.waitedMs > 0, "a grant after queueing reports a wait");
  assert.equal(table.waitingFor("k"), 1);
  table.release("k");
  assert.equal((await second).outcome, "granted");
  table.release("k");
  table.release("other");
  assert.equal(table.heldCount, 0);
  assert.equal(table.isHeld("k"), false);
  table.release("k"); // releasing a free key changes nothing
  assert.equal(table.heldCount, 0);
});

test("lock table: an aborted wait leaves the key to its holder; refusals by policy", async () => {
  const table = new KeyedFifoLock({ waitMs: 60_000, maxWaiters: 2 });
  await table.acquire("k");
  const controller = new AbortController();
  const waiting = table.acquire("k", controller.signal);
  controller.abort();
  assert.equal((await waiting).outcome, "aborted");
  assert.equal(table.waitingFor("k"), 0);
  table.release("k");
  assert.equal(table.isHeld("k"), false, "the aborted waiter was not handed the key");

  const noWait = new KeyedFifoLock({ waitMs: 0, maxWaiters: 2 });
  await noWait.acquire("k");
  assert.equal((await noWait.acquire("k")).outcome, "busy");
});

test("in-process conversation lock: leases in arrival order, visible through state()", async () => {
  const lock = new MemoryConversationLock({ waitMs: 60_000, maxWaiters: 4 });
  const held = await lock.acquire("k");
  assert.ok(held.ok);
  assert.equal(held.lease.waitedMs, 0);
  const order: string[] = [];
  const waiter = (name: string) =>
    lock.acquire("k").then(async (outcome) => {
      assert.ok(outcome.ok);
      assert.ok(outcome.lease.waitedMs > 0);
      order.push(name);
      await outcome.lease.release();
    });
  const both = Promise.all([waiter("first"), waiter("second")]);
  assert.deepEqual(lock.state("k"), { held: true, waiting: 2 });
  void held.lease.release();
  void held.lease.release();
  assert.deepEqual(lock.state("k"), { held: true, waiting: 1 }, "a second release of one lease hands nothing more");
  await both;
  assert.deepEqual(order, ["first", "second"]);
  assert.deepEqual(lock.state("k"), { held: false, waiting: 0 });
});
