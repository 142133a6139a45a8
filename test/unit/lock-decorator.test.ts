// One way to decorate a conversation lock, and the decorator the service puts on it.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { ConversationLock } from "../../src/coordination/locks/conversation-lock.ts";
import { decorateLock, type LockDecorator } from "../../src/coordination/locks/lock-decorator.ts";
import { countLockOutcomes } from "../../src/coordination/locks/lock-metrics.ts";
import { MemoryConversationLock } from "../../src/coordination/locks/memory-lock.ts";
import { ServiceMetrics } from "../../src/observability/metrics.ts";

test("decorators wrap in order, the first next to the lock; ping and close reach the lock", async () => {
  const calls: string[] = [];
  const lock: ConversationLock = {
    acquire: async (key) => {
      calls.push(`lock ${key}`);
      return { ok: false, reason: "busy" };
    },
    ping: async () => void calls.push("ping"),
    close: async () => void calls.push("close"),
  };
  const named =
    (name: string): LockDecorator =>
    (next) =>
    async (key, signal) => {
      calls.push(`${name} in`);
      const outcome = await next(key, signal);
      calls.push(`${name} out`);
      return outcome;
    };
  const decorated = decorateLock(lock, named("inner"), named("outer"));
  assert.deepEqual(await decorated.acquire("k"), { ok: false, reason: "busy" });
  await decorated.ping();
  await decorated.close();
  assert.deepEqual(calls, ["outer in", "inner in", "lock k", "inner out", "outer out", "ping", "close"]);
});

test("the service's decorator: lock outcomes counted", async () => {
  const metrics = new ServiceMetrics();
  const base = new MemoryConversationLock({ waitMs: 60_000, maxWaiters: 1 });
  const lock = decorateLock(base, countLockOutcomes(metrics));
  const value = async (name: string, labels: Record<string, string> = {}) => {
    const metric = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
    return metric?.values.find((v) => Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want))?.value;
  };

  const held = await lock.acquire("k");
  assert.ok(held.ok);
  const waiting = lock.acquire("k");
  assert.deepEqual(base.state("k"), { held: true, waiting: 1 });
  assert.deepEqual(await lock.acquire("k"), { ok: false, reason: "queue_full" });
  assert.equal(await value("agenthost_lock_conflicts_total", { reason: "queue_full" }), 1);

  await held.lease.release();
  const granted = await waiting;
  assert.ok(granted.ok);
  assert.equal(await value("agenthost_lock_waits_total"), 1, "the queued grant counts as a wait");
  await granted.lease.release();
});
