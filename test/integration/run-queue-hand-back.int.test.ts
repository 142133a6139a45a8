// A worker that drains hands its background runs back to the queue (RunQueueEngine.handBack): each
// is stopped, pending again, and continued by another worker. A run whose attempt has already
// confirmed that it writes the run's end (Execution.writesEnd answered true) is over, though: handed
// back at that moment, its record went from its final status back to `pending` and the run was
// queued again, for the next attempt to end a second time. Both engines let such a run finish
// instead: the database engine (on the memory backend's queue) and BullMQ (on the real Redis).
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import { after, test } from "node:test";
import { Redis } from "ioredis";
import { BullmqRunQueue, RUN_QUEUE } from "../../src/background/bullmq-engine.ts";
import { DatabaseRunQueue } from "../../src/background/database-engine.ts";
import type { Execution, RunQueueEngine } from "../../src/background/run-queue-engine.ts";
import { MemoryRunQueue, type NewQueuedRun } from "../../src/checkpoints/run-queue.ts";
import { RunAborted } from "../../src/errors/classify.ts";
import { createLogger } from "../../src/observability/logger.ts";
import { waitFor } from "../helpers/raw-http.ts";
import { REDIS_URL } from "../helpers/redis.ts";

const logger = createLogger({ LOG_LEVEL: "warn" }, new Writable({ write: (_chunk, _encoding, done) => done() }));
const admin = new Redis(REDIS_URL);
const prefixes: string[] = [];

after(async () => {
  for (const prefix of prefixes) {
    const keys = await admin.keys(`${prefix}:*`);
    if (keys.length) await admin.del(...keys);
  }
  admin.disconnect();
});

/**
 * Each engine, with a lease of `leaseMs`, and how to take a run's claim from it as another attempt
 * would once its worker was away past the lease.
 */
const ENGINES: ReadonlyArray<{ readonly name: string; make(leaseMs?: number): { queue: RunQueueEngine; takeOver(run: NewQueuedRun): Promise<void> } }> = [
  {
    name: "database",
    make: (leaseMs = 30_000) => {
      const store = new MemoryRunQueue();
      const takeOver = async ({ runId, userId, threadId }: NewQueuedRun) => {
        const [row] = await store.onThread(userId, threadId);
        await store.release(runId, row!.leaseOwner!, Date.now(), false);
        assert.equal((await store.claim("another-worker", Date.now(), Date.now() + 60_000, 1))[0]?.runId, runId);
      };
      return { queue: new DatabaseRunQueue(store, { leaseMs, pollMs: 50, logger }), takeOver };
    },
  },
  {
    name: "bullmq",
    make: (leaseMs = 30_000) => {
      const keyPrefix = `agenthost-test:${randomUUID()}`;
      prefixes.push(keyPrefix);
      const takeOver = async ({ runId }: NewQueuedRun) => {
        await admin.set(`${keyPrefix}:bull:${RUN_QUEUE}:${runId}:lock`, "another-attempt", "PX", 60_000);
      };
      return { queue: new BullmqRunQueue({ url: REDIS_URL, keyPrefix, leaseMs, pollMs: 50, logger }), takeOver };
    },
  },
];

for (const { name, make } of ENGINES) {
  test(`${name} engine: a drain hands back a run that has not confirmed its end, and lets one that has finish, out of the queue`, async () => {
    const { queue } = make();
    /** What each attempt saw once the test let it go on: whether it was handed back or stopped. */
    const seen = new Map<string, { attempt: number; handingBack: boolean; aborted: boolean }>();
    const confirmed = new Set<string>();
    const gates = new Map<string, () => void>();
    const ending = (threadId: string) => threadId.startsWith("ending-");
    queue.start(async (claimed, execution: Execution) => {
      assert.equal(await execution.started("head"), true);
      const gate = new Promise<void>((resolve) => gates.set(claimed.runId, resolve));
      if (ending(claimed.threadId)) {
        // Its events have ended, and this attempt writes its end.
        assert.equal(await execution.writesEnd(), true);
        confirmed.add(claimed.runId);
      }
      await Promise.race([gate, new Promise((resolve) => execution.control.signal.addEventListener("abort", resolve, { once: true }))]);
      seen.set(claimed.runId, { attempt: claimed.attempt, handingBack: execution.handingBack(), aborted: execution.control.signal.aborted });
      return "done";
    }, 2);
    const ends = { runId: randomUUID(), userId: "alice", threadId: `ending-${randomUUID()}`, availableAt: Date.now(), caller: {} };
    const runs = { runId: randomUUID(), userId: "alice", threadId: `running-${randomUUID()}`, availableAt: Date.now(), caller: {} };
    await queue.add(ends);
    await queue.add(runs);
    queue.wake();
    await waitFor(() => confirmed.has(ends.runId) && gates.has(runs.runId), "one run confirmed its end, the other executes");

    const drained = queue.handBack();
    // The run still executing is stopped at once; the one whose end is being written is not.
    await waitFor(() => seen.has(runs.runId), "the executing run is stopped by the hand-back");
    assert.deepEqual(seen.get(runs.runId), { attempt: 1, handingBack: true, aborted: true });
    assert.equal(seen.has(ends.runId), false);
    gates.get(ends.runId)!();
    await drained;
    assert.deepEqual(seen.get(ends.runId), { attempt: 1, handingBack: false, aborted: false });

    // The ended run left the queue; the handed-back one waits there for another worker.
    assert.deepEqual(await queue.onThread("alice", ends.threadId), []);
    assert.deepEqual(await queue.onThread("alice", runs.threadId), [runs.runId]);
    await queue.close();
  });
}

for (const { name, make } of ENGINES) {
  test(`${name} engine: a run lost to another attempt is not handed back by a drain that comes after`, async () => {
    // A short lease: its renewal, every third of it, finds the claim gone.
    const { queue, takeOver } = make(600);
    const seen: Array<{ handingBack: boolean }> = [];
    let gate!: () => void;
    const held = new Promise<void>((resolve) => (gate = resolve));
    let lost = false;
    queue.start(async (_claimed, execution: Execution) => {
      assert.equal(await execution.started("head"), true);
      execution.control.signal.addEventListener("abort", () => (lost = true), { once: true });
      // Its graph unwinds slowly after the abort: the drain comes meanwhile.
      await held;
      seen.push({ handingBack: execution.handingBack() });
      return "done";
    }, 1);
    const taken = { runId: randomUUID(), userId: "alice", threadId: `lost-${randomUUID()}`, availableAt: Date.now(), caller: {} };
    await queue.add(taken);
    queue.wake();
    await waitFor(async () => (await queue.depth()).executing === 1, "the run executes");
    await takeOver(taken);
    await waitFor(() => lost, "the attempt hears it lost its lease");
    const drained = queue.handBack();
    gate();
    await drained;
    // Not this attempt's to give back: the attempt that holds it ends it.
    assert.deepEqual(seen, [{ handingBack: false }]);
    await queue.close();
  });
}

for (const { name, make } of ENGINES) {
  test(`${name} engine: a run stopped already (cancelled) when the drain comes is not handed back: it ends as cancelled`, async () => {
    const { queue } = make();
    const seen: Array<{ handingBack: boolean; reason: unknown }> = [];
    let gate!: () => void;
    const held = new Promise<void>((resolve) => (gate = resolve));
    let cancelled = false;
    queue.start(async (_claimed, execution: Execution) => {
      assert.equal(await execution.started("head"), true);
      // Its cancel stops it; its graph is still unwinding when the drain comes.
      execution.control.abort(new RunAborted("cancelled"));
      cancelled = true;
      await held;
      seen.push({ handingBack: execution.handingBack(), reason: (execution.control.signal.reason as RunAborted).reason });
      return "done";
    }, 1);
    const stopped = { runId: randomUUID(), userId: "alice", threadId: `cancelled-${randomUUID()}`, availableAt: Date.now(), caller: {} };
    await queue.add(stopped);
    queue.wake();
    await waitFor(() => cancelled, "the run is cancelled");
    const drained = queue.handBack();
    gate();
    await drained;
    assert.deepEqual(seen, [{ handingBack: false, reason: "cancelled" }]);
    assert.deepEqual(await queue.onThread("alice", stopped.threadId), [], "it left the queue, ended");
    await queue.close();
  });
}
