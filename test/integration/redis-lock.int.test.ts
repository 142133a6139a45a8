// RedisConversationLock against the real Redis at 127.0.0.1:6379, a unique key prefix per test.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, test } from "node:test";
import { Redis } from "ioredis";
import type { LockQueuePolicy } from "../../src/coordination/locks/conversation-lock.ts";
import { LeaseReaper } from "../../src/coordination/locks/lease-reaper.ts";
import { lockKey, lockScripts } from "../../src/coordination/locks/redis-lock-scripts.ts";
import { RedisConversationLock, type LeaseEvent } from "../../src/coordination/locks/redis-lock.ts";
import { RunAborted } from "../../src/errors/classify.ts";
import { waitFor } from "../helpers/raw-http.ts";
import { REDIS_URL } from "../helpers/redis.ts";

const admin = new Redis(REDIS_URL);
const opened: RedisConversationLock[] = [];
const prefixes: string[] = [];

after(async () => {
  await Promise.all(opened.map((lock) => lock.close()));
  for (const prefix of prefixes) {
    const keys = await admin.keys(`${prefix}*`);
    if (keys.length) await admin.del(...keys);
  }
  admin.disconnect();
});

/** Two locks on one prefix: two "hosts" sharing Redis. */
function hosts(policy: LockQueuePolicy, leaseMs = 10_000): [RedisConversationLock, RedisConversationLock, string] {
  const keyPrefix = `agenthost-test:${randomUUID()}:`;
  prefixes.push(keyPrefix);
  const make = () => new RedisConversationLock({ url: REDIS_URL, keyPrefix, leaseMs, policy });
  const pair: [RedisConversationLock, RedisConversationLock] = [make(), make()];
  opened.push(...pair);
  return [...pair, keyPrefix];
}

test("one holder per key across instances; busy at once without a queue; other keys unaffected", async () => {
  const [a, b] = hosts({ waitMs: 0, maxWaiters: 32 });
  const first = await a.acquire("k1");
  assert.ok(first.ok);
  assert.equal(first.lease.waitedMs, 0);
  assert.deepEqual(await b.acquire("k1"), { ok: false, reason: "busy" });
  const other = await b.acquire("k2");
  assert.ok(other.ok);
  await first.lease.release();
  const again = await b.acquire("k1");
  assert.ok(again.ok);
  await again.lease.release();
  await other.lease.release();
});

test("waiters get the lock in arrival order when it frees; the queue is bounded", async () => {
  const [a, b, prefix] = hosts({ waitMs: 5_000, maxWaiters: 2 });
  const queued = async () => admin.zcard(`${prefix}queue:k`);
  const holder = await a.acquire("k");
  assert.ok(holder.ok);
  const order: string[] = [];
  const waiter = (lock: RedisConversationLock, name: string) =>
    lock.acquire("k").then(async (outcome) => {
      assert.ok(outcome.ok, name);
      assert.ok(outcome.lease.waitedMs > 0);
      order.push(name);
      await outcome.lease.release();
    });
  const first = waiter(b, "first");
  await waitFor(async () => (await queued()) === 1, "the first waiter queued");
  const second = waiter(a, "second");
  await waitFor(async () => (await queued()) === 2, "the second waiter queued");
  assert.deepEqual(await b.acquire("k"), { ok: false, reason: "queue_full" });
  const released = performance.now();
  await holder.lease.release();
  await Promise.all([first, second]);
  assert.deepEqual(order, ["first", "second"]);
  await waitFor(async () => (await queued()) === 0, "both waiters out of the queue");
  // The release message wakes the first waiter well before its next poll would matter.
  assert.ok(performance.now() - released < 2_000);
});

test("a wait longer than the queue time ends in wait_expired; an aborted wait ends in aborted", async () => {
  const [a, b, prefix] = hosts({ waitMs: 400, maxWaiters: 4 });
  const holder = await a.acquire("k");
  assert.ok(holder.ok);
  const started = performance.now();
  assert.deepEqual(await b.acquire("k"), { ok: false, reason: "wait_expired" });
  assert.ok(performance.now() - started >= 350);
  await waitFor(async () => (await admin.zcard(`${prefix}queue:k`)) === 0, "the expired waiter out of the queue");
  const controller = new AbortController();
  const waiting = b.acquire("k", controller.signal);
  await waitFor(async () => (await admin.zcard(`${prefix}queue:k`)) === 1, "the waiter queued");
  controller.abort();
  assert.deepEqual(await waiting, { ok: false, reason: "aborted" });
  await waitFor(async () => (await admin.zcard(`${prefix}queue:k`)) === 0, "the aborted waiter out of the queue");
  await holder.lease.release();
});

test("the lease is extended while held, past its lease time", async () => {
  const [a, b, prefix] = hosts({ waitMs: 0, maxWaiters: 4 }, 1_000);
  const holder = await a.acquire("k");
  assert.ok(holder.ok);
  // Extensions come every half lease: after three, the lease has outlived its first 1 s term.
  let extensions = 0;
  let ttl = await admin.pttl(`${prefix}lock:k`);
  await waitFor(async () => {
    const now = await admin.pttl(`${prefix}lock:k`);
    if (now > ttl) extensions++;
    ttl = now;
    return extensions >= 3;
  }, "three extensions of the lease");
  assert.equal(holder.lease.lost.aborted, false);
  assert.deepEqual(await b.acquire("k"), { ok: false, reason: "busy" });
  await holder.lease.release();
  assert.ok((await b.acquire("k")).ok);
});

test("a lease taken over by someone else aborts the run through `lost`", async () => {
  const [a, , prefix] = hosts({ waitMs: 0, maxWaiters: 4 }, 1_000);
  const holder = await a.acquire("k");
  assert.ok(holder.ok);
  // Simulate an expiry during a partition: another holder's value replaces ours.
  await admin.set(`${prefix}lock:k`, "someone-else", "PX", 5_000);
  await new Promise<void>((resolve) => holder.lease.lost.addEventListener("abort", () => resolve(), { once: true }));
  assert.ok(holder.lease.lost.reason instanceof RunAborted);
  assert.equal((holder.lease.lost.reason as RunAborted).reason, "lock_lost");
  await holder.lease.release();
  assert.equal(await admin.get(`${prefix}lock:k`), "someone-else", "release never deletes another holder's lock");
});

test("a holder that vanished without releasing frees the key within its lease time", async () => {
  const [a, b] = hosts({ waitMs: 3_000, maxWaiters: 4 }, 1_000);
  const holder = await a.acquire("k");
  assert.ok(holder.ok);
  await a.close(); // the host dies: no extension, no release
  const started = performance.now();
  const waiter = await b.acquire("k");
  assert.ok(waiter.ok);
  assert.ok(performance.now() - started < 1_500, "within the lease time");
  await waiter.lease.release();
});

test("ping fails and acquire throws while Redis is unreachable", async () => {
  const lock = new RedisConversationLock({
    url: "redis://127.0.0.1:1",
    keyPrefix: "agenthost-test:unreachable:",
    leaseMs: 1_000,
    policy: { waitMs: 0, maxWaiters: 1 },
  });
  opened.push(lock);
  await assert.rejects(lock.ping());
  await assert.rejects(lock.acquire("k"));
});

test("LeaseReaper releases a dead owner's reported leases, wakes their waiters, and never a lease someone else holds", async () => {
  const keyPrefix = `agenthost-test:${randomUUID()}:`;
  prefixes.push(keyPrefix);
  const reaper = new LeaseReaper({ url: REDIS_URL, keyPrefix });
  const events: LeaseEvent[] = [];
  const policy = { waitMs: 5_000, maxWaiters: 4 };
  const dying = new RedisConversationLock({ url: REDIS_URL, keyPrefix, leaseMs: 10_000, policy, onLease: (event) => {
    events.push(event);
    reaper.record(1, event);
  } });
  const other = new RedisConversationLock({ url: REDIS_URL, keyPrefix, leaseMs: 10_000, policy });
  opened.push(dying, other);
  try {
    const held = await dying.acquire("mine");
    const released = await dying.acquire("released");
    assert.ok(held.ok && released.ok);
    await released.lease.release();
    assert.deepEqual(events.map((e) => `${e.kind}:${e.key}`), ["held:mine", "held:released", "dropped:released"]);
    // A lease the owner once held that expired and was taken by another since: another token.
    const stolen = await other.acquire("stolen");
    assert.ok(stolen.ok);
    reaper.record(1, { kind: "held", key: "stolen", token: "the-dead-owner's-old-token" });

    // Owner 1 "dies" (its lease is never released nor extended again); a waiter queues on its key.
    const started = performance.now();
    const waiter = other.acquire("mine");
    await waitFor(async () => (await admin.zcard(`${keyPrefix}queue:mine`)) === 1, "the waiter queued on the dead owner's key");
    assert.equal(await reaper.reap(1), 1, "only the lease still holding the dead owner's token");
    const outcome = await waiter;
    assert.ok(outcome.ok, "the waiter got the dead owner's conversation");
    assert.ok(performance.now() - started < 2_000, "long before the 10 s lease ran out");
    assert.equal(await admin.exists(`${keyPrefix}lock:stolen`), 1, "the other owner's lease is untouched");
    assert.equal(await reaper.reap(1), 0, "reaping twice releases nothing");
    await outcome.lease.release();
    await stolen.lease.release();
  } finally {
    reaper.close();
  }
});

test("the lease scripts: taken only when free, extended and deleted only with the holder's token", async () => {
  const keyPrefix = `agenthost-test:${randomUUID()}:`;
  prefixes.push(keyPrefix);
  const scripts = lockScripts(admin);
  const lock = lockKey(keyPrefix, "k");
  assert.equal(await scripts.take(lock, "mine", 5_000), true);
  assert.equal(await scripts.take(lock, "theirs", 5_000), false, "held: not taken again");
  assert.equal(await admin.get(lock), "mine");

  assert.equal(await scripts.extend(lock, "theirs", 60_000), false);
  assert.ok((await admin.pttl(lock)) <= 5_000, "another token extends nothing");
  assert.equal(await scripts.extend(lock, "mine", 60_000), true);
  assert.ok((await admin.pttl(lock)) > 5_000);

  assert.equal(await scripts.drop(lock, "theirs"), false);
  assert.equal(await admin.get(lock), "mine", "another token deletes nothing");
  assert.equal(await scripts.drop(lock, "mine"), true);
  assert.equal(await admin.exists(lock), 0);
  assert.equal(await scripts.extend(lock, "mine", 60_000), false, "a lease gone is not brought back");
  assert.equal(await admin.exists(lock), 0);
});
