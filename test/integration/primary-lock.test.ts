// The primary-brokered lock: PrimaryConversationLock (worker side) talking to a LockBroker (primary
// side) over in-memory channels that deliver asynchronously, like IPC.
import assert from "node:assert/strict";
import { test } from "node:test";
import { PrimaryConversationLock } from "../../src/coordination/locks/primary-lock.ts";
import type { LockQueuePolicy } from "../../src/coordination/locks/conversation-lock.ts";
import { LockBroker } from "../../src/coordination/locks/lock-broker.ts";
import { RunAborted } from "../../src/errors/classify.ts";
import { brokeredWorkers } from "../helpers/ipc-channel.ts";
import { waitFor } from "../helpers/raw-http.ts";

interface FakeWorker {
  readonly lock: PrimaryConversationLock;
  /** The worker dies: the broker forgets it, the worker's channel closes. */
  die(): void;
}

function setup(policy: LockQueuePolicy) {
  const broker = new LockBroker(policy);
  const connect = brokeredWorkers(broker);
  const worker = (): FakeWorker => {
    const { channel, die } = connect();
    return { lock: new PrimaryConversationLock(channel, policy), die };
  };
  return { broker, worker };
}

test("one holder per key across workers; busy without a queue; release frees it", async () => {
  const { broker, worker } = setup({ waitMs: 0, maxWaiters: 8 });
  const a = worker();
  const b = worker();
  const held = await a.lock.acquire("k");
  assert.ok(held.ok);
  assert.equal(held.lease.waitedMs, 0);
  assert.deepEqual(await b.lock.acquire("k"), { ok: false, reason: "busy" });
  await held.lease.release();
  assert.equal(broker.heldCount, 0, "a release resolves once the primary has the lock free");
  const next = await b.lock.acquire("k");
  assert.ok(next.ok);
  await next.lease.release();
  await b.lock.ping();
});

test("a waiter on another worker gets its turn; a full queue answers at once, an expired wait after the queue time", async () => {
  const { broker, worker } = setup({ waitMs: 300, maxWaiters: 1 });
  const a = worker();
  const b = worker();
  const held = await a.lock.acquire("k");
  assert.ok(held.ok);
  const waiting = b.lock.acquire("k");
  await waitFor(() => broker.state("k").waiting === 1, "b queued at the primary");
  assert.deepEqual(await a.lock.acquire("k"), { ok: false, reason: "queue_full" });
  await held.lease.release();
  const granted = await waiting;
  assert.ok(granted.ok);
  assert.ok(granted.lease.waitedMs > 0);
  assert.deepEqual(await a.lock.acquire("k"), { ok: false, reason: "wait_expired" });
  await granted.lease.release();
});

test("a dead worker's locks are released at once and its queued requests dropped", async () => {
  const { broker, worker } = setup({ waitMs: 2_000, maxWaiters: 8 });
  const a = worker();
  const b = worker();
  const held = await a.lock.acquire("k");
  assert.ok(held.ok);
  const aQueued = a.lock.acquire("k2"); // nothing queued yet on k2: granted
  assert.ok((await aQueued).ok);
  const started = performance.now();
  const waiting = b.lock.acquire("k");
  await waitFor(() => broker.state("k").waiting === 1, "b queued at the primary");
  a.die();
  assert.ok(held.lease.lost.aborted, "the dead side's leases report themselves lost");
  assert.ok(held.lease.lost.reason instanceof RunAborted);
  const granted = await waiting;
  assert.ok(granted.ok);
  assert.ok(performance.now() - started < 500);
  assert.equal(broker.heldCount, 1, "k2 was released with its worker; only b's k remains");
  await assert.rejects(a.lock.acquire("k3"));
  await granted.lease.release();
});

test("an aborted wait leaves the queue; a grant that races the abort is handed back", async () => {
  const { broker, worker } = setup({ waitMs: 2_000, maxWaiters: 8 });
  const a = worker();
  const b = worker();
  const held = await a.lock.acquire("k");
  assert.ok(held.ok);
  const controller = new AbortController();
  const waiting = b.lock.acquire("k", controller.signal);
  await waitFor(() => broker.state("k").waiting === 1, "b queued at the primary");
  // Release and abort in the same tick: the broker may grant before it hears of the cancel.
  void held.lease.release();
  controller.abort();
  assert.deepEqual(await waiting, { ok: false, reason: "aborted" });
  await waitFor(() => broker.heldCount === 0, "the raced grant handed back");
  const again = await a.lock.acquire("k");
  assert.ok(again.ok);
  await again.lease.release();
});
