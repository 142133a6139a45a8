// The BullMQ engine of background runs (src/background/bullmq-engine.ts) against the real Redis, a
// key prefix per test. A run waiting behind another of its thread is picked up by a worker every
// BACKGROUND_POLL_INTERVAL only to look whether it is first, and BullMQ calls it active meanwhile:
// taken out of the queue at that moment (a cancel, or an interrupt or rollback making room), it must
// count as queued, leave its thread's order at once and never execute. Before, it counted as
// executing: a rollback deleted its record while its job stayed first in line, and the thread's next
// run waited a minute for the record that would never come (a flaky test found it).
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import { after, test } from "node:test";
import { DelayedError, Worker } from "bullmq";
import { Redis } from "ioredis";
import { BullmqRunQueue, RUN_QUEUE } from "../../src/background/bullmq-engine.ts";
import type { ClaimedRun, ExecutionOutcome } from "../../src/background/run-queue-engine.ts";
import { createLogger } from "../../src/observability/logger.ts";
import { waitFor } from "../helpers/raw-http.ts";
import { REDIS_URL } from "../helpers/redis.ts";

const admin = new Redis(REDIS_URL);
const prefixes: string[] = [];
const logger = createLogger({ LOG_LEVEL: "warn" }, new Writable({ write: (_chunk, _encoding, done) => done() }));

after(async () => {
  for (const prefix of prefixes) {
    const keys = await admin.keys(`${prefix}:*`);
    if (keys.length) await admin.del(...keys);
  }
  admin.disconnect();
});

/** An engine on a prefix of its own, executing one run at a time; each run executes until the test lets it end. */
function engine() {
  const keyPrefix = `agenthost-test:${randomUUID()}`;
  prefixes.push(keyPrefix);
  const queue = new BullmqRunQueue({ url: REDIS_URL, keyPrefix, leaseMs: 30_000, pollMs: 50, logger });
  const executed: string[] = [];
  const ends = new Map<string, () => void>();
  queue.start(async (run: ClaimedRun): Promise<ExecutionOutcome> => {
    executed.push(run.runId);
    await new Promise<void>((resolve) => ends.set(run.runId, resolve));
    return "done";
  }, 1);
  /** Let the run end once it executes. */
  const end = async (runId: string) => {
    await waitFor(() => ends.has(runId), `run ${runId} executes`);
    ends.get(runId)!();
  };
  return { queue, keyPrefix, executed, end };
}

const run = (threadId: string) => ({ runId: randomUUID(), userId: "alice", threadId, availableAt: Date.now(), caller: {} });

test("a run taken out of the queue while a worker looks whether it is first is removed: it leaves its thread's order and never executes", async () => {
  const { queue, keyPrefix, executed, end } = engine();
  const thread = randomUUID();
  const first = run(thread);
  await queue.add(first);
  await waitFor(() => executed.includes(first.runId), "the first run executes");
  // The engine's one slot is taken: a worker of the test's own takes the next run and holds it active,
  // as the engine's worker does while it looks whether the run is first of its thread.
  let held!: () => void;
  const holding = new Promise<void>((resolve) => (held = resolve));
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const looker = new Worker(
    RUN_QUEUE,
    async (job, token) => {
      held();
      await released;
      await job.moveToDelayed(Date.now(), token);
      throw new DelayedError();
    },
    { connection: new Redis(REDIS_URL, { maxRetriesPerRequest: null }), prefix: `${keyPrefix}:bull` },
  );
  const waiting = run(thread);
  await queue.add(waiting);
  await holding;

  assert.equal(await queue.removeQueued(first.runId), false, "the executing run is not queued");
  assert.equal(await queue.removeQueued(waiting.runId), true, "the run only looking for its turn is queued");
  assert.deepEqual(await queue.onThread("alice", thread), [first.runId]);

  // Its holder gives it back to wait, as the engine's worker does when it is not first; then the
  // first run ends and the engine's worker is free to take it.
  const closing = looker.close();
  release();
  await closing;
  await end(first.runId);
  const next = run(thread);
  await queue.add(next);
  await end(next.runId);
  await waitFor(async () => (await queue.onThread("alice", thread)).length === 0, "the thread's queue empties");
  // The engine's worker takes the removed run's job again and drops it, its mark with it.
  await waitFor(async () => (await admin.exists(`${keyPrefix}:bg:claim:${waiting.runId}`)) === 0, "the removed run's mark goes with its job");
  assert.equal(await queue.removeQueued(waiting.runId), false, "its job is gone");
  assert.deepEqual(executed, [first.runId, next.runId], "the removed run never executed");
  await queue.close();
});

test("a waiting run is removed at once; an executing one is not, and after it leaves no claim of it is left", async () => {
  const { queue, keyPrefix, executed, end } = engine();
  const thread = randomUUID();
  const first = run(thread);
  const second = run(thread);
  await queue.add(first);
  await waitFor(() => executed.includes(first.runId), "the first run executes");
  await queue.add(second);
  assert.equal(await queue.removeQueued(first.runId), false);
  assert.equal(await queue.removeQueued(second.runId), true);
  assert.equal(await queue.removeQueued(second.runId), false, "removed already: gone");
  await end(first.runId);
  await waitFor(async () => (await queue.onThread("alice", thread)).length === 0, "the thread's queue empties");
  assert.deepEqual(executed, [first.runId]);
  assert.deepEqual(await admin.keys(`${keyPrefix}:bg:claim:*`), []);
  await queue.close();
});
