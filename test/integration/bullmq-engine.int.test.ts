// The BullMQ engine of background runs (src/background/bullmq-engine.ts) against the real Redis, a
// key prefix per test. BullMQ calls a job active while its worker only looks whether the run is
// first of its thread (every BACKGROUND_POLL_INTERVAL for a run waiting behind another), and while
// its attempt waits for a thread held by a run of the other API. Taken out of the queue at such a
// moment (a cancel, or an interrupt or rollback making room), the run must count as queued, leave
// its thread's order at once and never execute. Before, it counted as executing: a rollback deleted
// its record while its job stayed first in line, and the thread's next run waited a minute for the
// record that would never come (a flaky test found it). A run that has started (Execution.started)
// is executing, and cannot be taken out.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import { after, test } from "node:test";
import { DelayedError, Worker } from "bullmq";
import { Redis } from "ioredis";
import { BullmqRunQueue, RUN_QUEUE } from "../../src/background/bullmq-engine.ts";
import type { ClaimedRun, Execution, ExecutionOutcome } from "../../src/background/run-queue-engine.ts";
import { createLogger } from "../../src/observability/logger.ts";
import { waitFor } from "../helpers/raw-http.ts";
import { REDIS_URL } from "../helpers/redis.ts";
import { TcpProxy } from "../helpers/tcp-proxy.ts";

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

/**
 * An engine on a prefix of its own, executing one run at a time. Each attempt waits for the test:
 * `tell(run, "start")` starts it (Execution.started), then `tell(run, "end")` ends it; `tell(run,
 * "busy")` ends the attempt without starting it, as one does that finds its thread held by a run of
 * the other API.
 */
function engine() {
  const keyPrefix = `agenthost-test:${randomUUID()}`;
  prefixes.push(keyPrefix);
  const queue = new BullmqRunQueue({ url: REDIS_URL, keyPrefix, leaseMs: 30_000, pollMs: 50, logger });
  /** Runs that started, in order. */
  const executed: string[] = [];
  /** Runs whose attempt tried to start and found them no longer its own. */
  const refused: string[] = [];
  const asks = new Map<string, (what: string) => void>();
  const next = (runId: string) => new Promise<string>((resolve) => asks.set(runId, resolve));
  queue.start(async (run: ClaimedRun, execution: Execution): Promise<ExecutionOutcome> => {
    if ((await next(run.runId)) === "busy") return "busy";
    if (!(await execution.started("head"))) {
      refused.push(run.runId);
      return "done";
    }
    executed.push(run.runId);
    await next(run.runId);
    return "done";
  }, 1);
  const tell = async (runId: string, what: "start" | "end" | "busy") => {
    await waitFor(() => asks.has(runId), `run ${runId} waits for the test`);
    const answer = asks.get(runId)!;
    asks.delete(runId);
    answer(what);
  };
  const claim = (runId: string) => admin.get(`${keyPrefix}:bg:claim:${runId}`);
  return { queue, keyPrefix, executed, refused, tell, claim };
}

const run = (threadId: string) => ({ runId: randomUUID(), userId: "alice", threadId, availableAt: Date.now(), caller: {} });

test("a run taken out of the queue while a worker looks whether it is first is removed: it leaves its thread's order and never executes", async () => {
  const { queue, keyPrefix, executed, tell, claim } = engine();
  const thread = randomUUID();
  const first = run(thread);
  await queue.add(first);
  await tell(first.runId, "start");
  await waitFor(() => executed.includes(first.runId), "the first run executes");
  // The engine's one slot is taken: a worker of the test's own takes the next run and holds it active,
  // as the engine's worker does while it looks whether the run is first of its thread.
  let held!: () => void;
  const holding = new Promise<void>((resolve) => (held = resolve));
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const lookerConnection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const looker = new Worker(
    RUN_QUEUE,
    async (job, token) => {
      held();
      await released;
      await job.moveToDelayed(Date.now(), token);
      throw new DelayedError();
    },
    { connection: lookerConnection, prefix: `${keyPrefix}:bull` },
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
  lookerConnection.disconnect();
  await tell(first.runId, "end");
  const next = run(thread);
  await queue.add(next);
  await tell(next.runId, "start");
  await tell(next.runId, "end");
  await waitFor(async () => (await queue.onThread("alice", thread)).length === 0, "the thread's queue empties");
  // The engine's worker takes the removed run's job again and drops it, its mark with it.
  await waitFor(async () => (await claim(waiting.runId)) === null, "the removed run's mark goes with its job");
  assert.equal(await queue.removeQueued(waiting.runId), false, "its job is gone");
  assert.deepEqual(executed, [first.runId, next.runId], "the removed run never executed");
  await queue.close();
});

test("a run whose attempt waits for its thread is taken out: that attempt cannot start it, and a busy one leaves it dropped", async () => {
  const { queue, executed, refused, tell, claim } = engine();
  // Taken out while its attempt waits; the attempt then gets the thread and tries to start it.
  const [one, two] = [run(randomUUID()), run(randomUUID())];
  await queue.add(one);
  await waitFor(async () => (await queue.depth()).executing === 1, "the first run's attempt holds its job");
  assert.equal(await queue.removeQueued(one.runId), true);
  await tell(one.runId, "start");
  await waitFor(() => refused.includes(one.runId), "its attempt finds it taken out");
  await waitFor(async () => (await claim(one.runId)) === null, "its mark goes with its job");

  // Taken out while its attempt waits; the attempt finds the thread busy and gives the run back.
  await queue.add(two);
  await waitFor(async () => (await queue.depth()).executing === 1, "the second run's attempt holds its job");
  assert.equal(await queue.removeQueued(two.runId), true);
  await tell(two.runId, "busy");
  await waitFor(async () => (await claim(two.runId)) === null, "its next turn drops it");
  // Its mark goes just before BullMQ completes its job: the job leaves the active count a moment later.
  await waitFor(async () => {
    const depth = await queue.depth();
    return depth.waiting === 0 && depth.executing === 0;
  }, "its job leaves the queue");
  assert.deepEqual(executed, []);
  await queue.close();
});

test("a waiting run is removed at once; an executing one is not, and after it leaves no claim of it is left", async () => {
  const { queue, keyPrefix, executed, tell } = engine();
  const thread = randomUUID();
  const first = run(thread);
  const second = run(thread);
  await queue.add(first);
  await tell(first.runId, "start");
  await waitFor(() => executed.includes(first.runId), "the first run executes");
  await queue.add(second);
  assert.equal(await queue.removeQueued(first.runId), false);
  assert.equal(await queue.removeQueued(second.runId), true);
  assert.equal(await queue.removeQueued(second.runId), false, "removed already: gone");
  await tell(first.runId, "end");
  await waitFor(async () => (await queue.onThread("alice", thread)).length === 0, "the thread's queue empties");
  assert.deepEqual(executed, [first.runId]);
  assert.deepEqual(await admin.keys(`${keyPrefix}:bg:claim:*`), []);
  await queue.close();
});

test("a worker whose job lock is lost mid-run stops the run, writes no end, and lets the job go to the attempt that claims it next", async () => {
  const keyPrefix = `agenthost-test:${randomUUID()}`;
  prefixes.push(keyPrefix);
  const lines: Array<Record<string, unknown>> = [];
  const heard = createLogger({ LOG_LEVEL: "warn" }, new Writable({ write: (chunk, _encoding, done) => (lines.push(JSON.parse(String(chunk))), done()) }));
  // A short lease: BullMQ renews the lock every 200 ms and looks for stalled jobs every 400 ms.
  const queue = new BullmqRunQueue({ url: REDIS_URL, keyPrefix, leaseMs: 400, pollMs: 50, logger: heard });
  const attempts: Array<{ attempt: number; aborted: boolean; wroteEnd: boolean }> = [];
  queue.start(async (claimed, execution) => {
    assert.equal(await execution.started("head"), true);
    if (claimed.attempt === 1) {
      // Its lock taken from under it, as when this worker was away past the lease: the next
      // renewal fails, and the run is stopped here.
      await admin.del(`${keyPrefix}:bull:${RUN_QUEUE}:${claimed.runId}:lock`);
      await new Promise((resolve) => execution.control.signal.addEventListener("abort", resolve, { once: true }));
    }
    attempts.push({ attempt: claimed.attempt, aborted: execution.control.signal.aborted, wroteEnd: await execution.writesEnd() });
    return "done";
  }, 1);
  const lost = run(randomUUID());
  await queue.add(lost);
  // BullMQ finds the job stalled (no lock) and gives it back: claimed again, as attempt 2.
  await waitFor(() => attempts.length === 2, "the run claimed again after its lock was lost");
  assert.deepEqual(attempts, [
    { attempt: 1, aborted: true, wroteEnd: false },
    { attempt: 2, aborted: false, wroteEnd: true },
  ]);
  assert.ok(lines.some((line) => line.msg === "background run lost its lease: another attempt takes it over" && line.run_id === lost.runId));
  // The second attempt ended it: out of the queue, no claim left, and no error reported for the lost lock.
  await waitFor(async () => (await queue.onThread("alice", lost.threadId)).length === 0, "the run leaves the queue");
  assert.deepEqual(await admin.keys(`${keyPrefix}:bg:claim:*`), []);
  assert.ok(!lines.some((line) => line.msg === "background runs: queue connection problem"), "the lost lock is not a connection problem");
  await queue.close();
});

test("the claim check before a run's end does not wait on a Redis that is away: the end is written, as before the check", async () => {
  const keyPrefix = `agenthost-test:${randomUUID()}`;
  prefixes.push(keyPrefix);
  const target = new URL(REDIS_URL);
  const proxy = new TcpProxy(Number(target.port || 6379), target.hostname);
  await proxy.start();
  const url = new URL(REDIS_URL);
  url.hostname = "127.0.0.1";
  url.port = String(proxy.port);
  const queue = new BullmqRunQueue({ url: url.toString(), keyPrefix, leaseMs: 2_000, pollMs: 50, logger });
  const answers: boolean[] = [];
  queue.start(async (_claimed, execution) => {
    assert.equal(await execution.started("head"), true);
    // Every connection of the engine's now goes unanswered (ioredis queues the commands).
    proxy.blackhole();
    answers.push(await execution.writesEnd());
    return "done";
  }, 1);
  await queue.add(run(randomUUID()));
  await waitFor(() => answers.length === 1, "the check answered while Redis was away");
  assert.deepEqual(answers, [true]);
  proxy.restore();
  await queue.close();
  await proxy.stop();
});

test("an idle worker looks at the queue every BACKGROUND_POLL_INTERVAL: each wait for a wake-up mark is bounded by it", async () => {
  // A mark can go to a connection that never acts on it (a worker frozen while it waited): the
  // others then find the job only at their next look, which this bound keeps to the poll interval.
  const keyPrefix = `agenthost-test:${randomUUID()}`;
  prefixes.push(keyPrefix);
  const marker = `${keyPrefix}:bull:${RUN_QUEUE}:marker`;
  // What the engine's worker asks Redis, as Redis sees it.
  const watcher = new Redis(REDIS_URL);
  const monitor = await watcher.monitor();
  const waits: number[] = [];
  monitor.on("monitor", (_time: string, args: string[]) => {
    if (args[0]?.toLowerCase() === "bzpopmin" && args[1] === marker) waits.push(Number(args.at(-1)));
  });
  const queue = new BullmqRunQueue({ url: REDIS_URL, keyPrefix, leaseMs: 30_000, pollMs: 250, logger });
  const executed: string[] = [];
  queue.start(async (claimed, execution) => {
    assert.equal(await execution.started("head"), true);
    executed.push(claimed.runId);
    return "done";
  }, 1);
  try {
    await waitFor(() => waits.length >= 3, "the idle worker waits for a mark, again and again");
    assert.ok(
      waits.every((seconds) => seconds > 0 && seconds <= 0.25),
      `each wait at most the poll interval: ${waits.join(", ")}`,
    );
    const next = run(randomUUID());
    await queue.add(next);
    await waitFor(() => executed.includes(next.runId), "a run added meanwhile is claimed");
  } finally {
    await queue.close();
    monitor.disconnect();
    watcher.disconnect();
  }
});
