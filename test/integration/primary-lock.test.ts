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
  // Offers to a worker that declined come again at its next release (no interval), so tests wait on state only.
  const broker = new LockBroker(policy, () => {}, 0);
  /** The kinds of the lock messages the broker got, in order. */
  const seen: string[] = [];
  const connect = brokeredWorkers({
    attach: (id, reply) => broker.attach(id, reply),
    detach: (id) => broker.detach(id),
    handle: (id, message) => {
      seen.push(message.ah === "lock.delegation" ? `${message.ah}:${message.accepted}` : message.ah);
      return broker.handle(id, message);
    },
  });
  const worker = (): FakeWorker => {
    const { channel, die } = connect();
    return { lock: new PrimaryConversationLock(channel, policy), die };
  };
  return { broker, worker, seen };
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

test("the only worker keeps the table: its locks send nothing to the primary, and one holder per key still holds", async () => {
  const { broker, worker, seen } = setup({ waitMs: 2_000, maxWaiters: 8 });
  const a = worker();
  await waitFor(() => a.lock.keepsTable, "the table handed to the only worker");
  assert.equal(broker.delegate, 1);
  const sent = seen.length;
  const held = await a.lock.acquire("k");
  assert.ok(held.ok);
  assert.deepEqual(await a.lock.acquire("k", undefined, false), { ok: false, reason: "busy" });
  const waiting = a.lock.acquire("k");
  await held.lease.release();
  const next = await waiting;
  assert.ok(next.ok);
  assert.ok(next.lease.waitedMs > 0);
  await next.lease.release();
  assert.deepEqual(seen.slice(sent), [], "no lock message while the worker keeps the table");
  assert.equal(broker.heldCount, 0);
});

test("a second worker takes the table back: the first one's held keys stay held for it until their last release, other keys are free at once", async () => {
  const { broker, worker } = setup({ waitMs: 5_000, maxWaiters: 8 });
  const a = worker();
  await waitFor(() => a.lock.keepsTable, "the table handed to the only worker");
  const first = await a.lock.acquire("k");
  assert.ok(first.ok);
  const queuedInA = a.lock.acquire("k"); // waits in a's own table
  const b = worker();
  const other = await b.lock.acquire("other");
  assert.ok(other.ok, "a key a never held is free for b");
  assert.equal(a.lock.keepsTable, false);
  assert.equal(broker.delegate, undefined);
  assert.deepEqual(await b.lock.acquire("k", undefined, false), { ok: false, reason: "busy" }, "k is held at the primary for a");
  const queuedInB = b.lock.acquire("k");
  await waitFor(() => broker.state("k").waiting === 1, "b queued at the primary behind a's hold");
  await first.lease.release();
  const second = await queuedInA;
  assert.ok(second.ok, "a's own waiter gets k from a's table");
  assert.deepEqual(await a.lock.acquire("k", undefined, false), { ok: false, reason: "busy" });
  await second.lease.release();
  const third = await queuedInB;
  assert.ok(third.ok, "a's last release of k frees it at the primary");
  // a asks the primary now, and queues behind b.
  const fourth = a.lock.acquire("k");
  await waitFor(() => broker.state("k").waiting === 1, "a queued at the primary");
  await third.lease.release();
  const granted = await fourth;
  assert.ok(granted.ok);
  await granted.lease.release();
  await other.lease.release();
  assert.equal(broker.heldCount, 0);
});

test("a worker that keeps the table dies: its locks go with it and the next only worker gets the table", async () => {
  const { broker, worker } = setup({ waitMs: 2_000, maxWaiters: 8 });
  const a = worker();
  await waitFor(() => a.lock.keepsTable, "the table handed to a");
  const held = await a.lock.acquire("k");
  assert.ok(held.ok);
  a.die();
  assert.ok(held.lease.lost.aborted, "its leases report themselves lost");
  assert.equal(broker.delegate, undefined);
  const b = worker();
  await waitFor(() => b.lock.keepsTable, "the table handed to b");
  const taken = await b.lock.acquire("k");
  assert.ok(taken.ok);
  await taken.lease.release();
});

test("a worker with a request on its way to the primary declines the table, and takes it after its release", async () => {
  const { broker, worker, seen } = setup({ waitMs: 2_000, maxWaiters: 8 });
  const a = worker();
  const b = worker();
  await b.lock.ping();
  // a becomes the only worker and is offered the table in the same turn as it asks the primary for k.
  b.die();
  const asked = a.lock.acquire("k");
  const held = await asked;
  assert.ok(held.ok);
  await waitFor(() => seen.includes("lock.delegation:false"), "the offer declined");
  assert.equal(a.lock.keepsTable, false);
  assert.equal(broker.state("k").held, true, "k is held at the primary");
  await held.lease.release();
  await waitFor(() => a.lock.keepsTable, "the table handed to a after its release");
  assert.equal(broker.delegate, 1);
  assert.deepEqual(
    seen.filter((kind) => kind.startsWith("lock.delegation")),
    ["lock.delegation:false", "lock.delegation:true"],
  );
  assert.equal(broker.heldCount, 0);
});
