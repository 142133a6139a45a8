import { createHash } from "node:crypto";
import { DelayedError, Queue, WaitingError, Worker, type Job } from "bullmq";
import { Redis } from "ioredis";
import type { NewQueuedRun } from "../checkpoints/run-queue.ts";
import { throttledReport } from "../coordination/locks/redis-connection.ts";
import { defineScript, type RedisScript } from "../coordination/redis-script.ts";
import { connectionProblemForLog, type Logger } from "../observability/logger.ts";
import { confirmEnd, executionState, handBackRun, loseRun, type ClaimedRun, type Execute, type Execution, type LosableRun, type RunQueueEngine } from "./run-queue-engine.ts";

/** The BullMQ queue of background runs. */
export const RUN_QUEUE = "background-runs";

export interface BullmqEngineOptions {
  readonly url: string;
  /** REDIS_KEY_PREFIX (without its separator). */
  readonly keyPrefix: string;
  /** BACKGROUND_RUN_LEASE, in milliseconds: BullMQ's job lock, and how often it looks for stalled jobs. */
  readonly leaseMs: number;
  /** BACKGROUND_POLL_INTERVAL, in milliseconds: how soon a run waiting for its thread looks again. */
  readonly pollMs: number;
  readonly logger: Logger;
}

/** A run's job: what the worker executing it needs, and what BullMQ's own counters do not say. */
interface RunJob {
  readonly runId: string;
  readonly userId: string;
  readonly threadId: string;
  readonly caller: Record<string, unknown>;
  /** When it may start, milliseconds since the epoch (after_seconds). */
  readonly availableAt: number;
  /** The thread's latest checkpoint when the run first started; null before. */
  base: string | null;
  /** Starts that were no attempt: waits for the thread, hand-backs. */
  uncounted: number;
}

/** One run this worker executes. */
interface Held extends LosableRun {
  /** This attempt started the run (its claim set to executing). */
  started: boolean;
}

/** How long closing waits for BullMQ (its worker's hand-backs, its connections) before letting go. */
const CLOSE_WAIT_MS = 3_000;

/**
 * What `work` gives, or `otherwise` once `ms` have passed or should it fail (closing must not hang
 * on a Redis that is away, nor a run's end wait for it).
 */
async function atMost<T>(work: Promise<T>, ms: number, otherwise: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<T>((resolve) => (timer = setTimeout(resolve, ms, otherwise)));
  try {
    return await Promise.race([work.catch(() => otherwise), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** How long the claim check before a run's end waits for Redis at most (and never past the lease). */
const END_CHECK_WAIT_MS = 5_000;

/** Kept a week for an operator to look at: a failed job is a fault of agenthost's, not of the run. */
const KEEP_FAILED = { age: 7 * 24 * 3600 };

/**
 * How long a run's claim key lives (it is deleted when the run leaves the queue; the bound is for a
 * run whose job was lost with its end unrecorded): longer than any run executes.
 */
const CLAIM_TTL_MS = 30 * 24 * 3600 * 1000;

/**
 * Whether a run may go on to execute. KEYS: the run's claim, its thread's order; ARGV: the run id.
 * Returns its claim when it has one ("executing": an earlier attempt's, whose worker stopped, so it
 * goes on; "removed": taken out of the queue), else "turn" when it is first of its thread, else the
 * id of the thread's first run ("first:<id>": it waits).
 */
const TURN = `local claim = redis.call('GET', KEYS[1])
if claim then return claim end
local first = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
if first and first ~= ARGV[1] then return 'first:' .. first end
return 'turn'`;

/** Mark a run executing unless it was removed. KEYS: its claim; ARGV: the TTL. 1 when marked. */
const START = `if redis.call('GET', KEYS[1]) == 'removed' then return 0 end
redis.call('SET', KEYS[1], 'executing', 'PX', ARGV[1])
return 1`;

/** Mark a run removed unless it is executing. KEYS: its claim; ARGV: the TTL. 1 when marked. */
const REMOVE = `if redis.call('GET', KEYS[1]) == 'executing' then return 0 end
redis.call('SET', KEYS[1], 'removed', 'PX', ARGV[1])
return 1`;

/**
 * Background runs on BullMQ over REDIS_URL, for a fleet of hosts: a run is a job (its id the run's),
 * delayed jobs are `after_seconds`, and BullMQ's stalled-job detection is the crash recovery: a
 * worker holds its job's lock for BACKGROUND_RUN_LEASE and renews it; a worker that dies leaves the
 * lock to expire, and the job goes back to wait for another worker (its start counted by BullMQ).
 *
 * Runs of one thread start one at a time in the order they were accepted: each is added to its
 * thread's sorted set (`<prefix>:bg:thread:<hash>`, scored by a counter) and leaves it when it
 * ends; a job that is not first of its thread goes back to wait (delayed by BACKGROUND_POLL_INTERVAL,
 * not counted as an attempt), and the run that ends promotes the next. The runs survive what the
 * Redis server keeps: run Redis with persistence (AOF) for them to survive a restart of Redis itself.
 */
export class BullmqRunQueue implements RunQueueEngine {
  readonly name = "bullmq";
  private readonly connection: Redis;
  private readonly queue: Queue<RunJob>;
  private worker: Worker<RunJob> | undefined;
  private workerConnection: Redis | undefined;
  private readonly held = new Map<string, Held>();
  /** The one hand-back (drain and close both ask for it). */
  private handedBack: Promise<void> | undefined;
  private readonly prefix: string;
  /** Connection problems of the queue's connections, at most one log line per ten seconds. */
  private readonly report: (error: Error) => void;
  private readonly turnScript: RedisScript;
  private readonly startScript: RedisScript;
  private readonly removeScript: RedisScript;

  constructor(private readonly options: BullmqEngineOptions) {
    this.prefix = options.keyPrefix;
    this.report = throttledReport((error) => options.logger.warn(connectionProblemForLog(error), "background runs: queue connection problem"));
    this.connection = new Redis(options.url, { maxRetriesPerRequest: 1, connectionName: `agenthost:${process.pid}:runs` });
    this.connection.on("error", this.report);
    this.turnScript = defineScript(this.connection, "agenthostRunTurn", TURN, 2);
    this.startScript = defineScript(this.connection, "agenthostRunStart", START, 1);
    this.removeScript = defineScript(this.connection, "agenthostRunRemove", REMOVE, 1);
    this.queue = new Queue<RunJob>(RUN_QUEUE, { connection: this.connection, prefix: `${this.prefix}:bull` });
    this.queue.on("error", this.report);
  }

  private threadKey(userId: string, threadId: string): string {
    const hash = createHash("sha256").update(JSON.stringify([userId, threadId])).digest("hex").slice(0, 32);
    return `${this.prefix}:bg:thread:${hash}`;
  }

  /**
   * A run's claim: absent while it waits, "executing" from the moment an attempt starts it (holding
   * its thread: Execution.started) until it leaves the queue or is handed back, "removed" once taken
   * out of the queue. BullMQ's own state cannot tell these apart: a job is active too while its
   * worker only looks whether it is first of its thread, or waits for its thread to be free.
   */
  private claimKey(runId: string): string {
    return `${this.prefix}:bg:claim:${runId}`;
  }

  async add(run: NewQueuedRun): Promise<void> {
    const seq = await this.connection.incr(`${this.prefix}:bg:seq`);
    await this.connection.zadd(this.threadKey(run.userId, run.threadId), seq, run.runId);
    const data: RunJob = { runId: run.runId, userId: run.userId, threadId: run.threadId, caller: run.caller, availableAt: run.availableAt, base: null, uncounted: 0 };
    await this.queue.add("run", data, {
      jobId: run.runId,
      delay: Math.max(0, run.availableAt - Date.now()),
      attempts: 1,
      removeOnComplete: true,
      removeOnFail: KEEP_FAILED,
    });
  }

  onThread(userId: string, threadId: string): Promise<string[]> {
    return this.connection.zrange(this.threadKey(userId, threadId), 0, -1);
  }

  async removeQueued(runId: string): Promise<boolean> {
    const job = await this.queue.getJob(runId);
    if (!job) return false;
    const state = await job.getState();
    if (state === "completed" || state === "failed") return false;
    if ((await this.removeScript(this.claimKey(runId), CLAIM_TTL_MS)) !== 1) return false;
    // A job active now has not started (its worker looks at its turn, or waits for its thread):
    // the mark stays for that worker, which drops the run.
    const removed = await job.remove().then(
      () => true,
      () => false,
    );
    await this.leave(job.data, removed);
    return true;
  }

  async depth(): Promise<{ waiting: number; executing: number }> {
    const counts = await this.queue.getJobCounts("waiting", "delayed", "prioritized", "active");
    return { waiting: (counts.waiting ?? 0) + (counts.delayed ?? 0) + (counts.prioritized ?? 0), executing: counts.active ?? 0 };
  }

  start(execute: Execute, slots: number): void {
    if (slots === 0) return;
    const { leaseMs } = this.options;
    this.workerConnection = new Redis(this.options.url, { maxRetriesPerRequest: null, connectionName: `agenthost:${process.pid}:runs-worker` });
    this.workerConnection.on("error", this.report);
    this.worker = new Worker<RunJob>(RUN_QUEUE, (job, token) => this.process(job, token!, execute), {
      connection: this.workerConnection,
      prefix: `${this.prefix}:bull`,
      concurrency: slots,
      lockDuration: leaseMs,
      stalledInterval: leaseMs,
      // An idle worker waits for a job's wake-up mark at most BACKGROUND_POLL_INTERVAL (BullMQ's 5 s
      // by default), then looks at the queue itself. A mark can go to a worker that never acts on
      // it: one frozen while it waited, whose connection Redis still serves. The other workers would
      // otherwise take a stalled run back 5 s later.
      drainDelay: this.options.pollMs / 1000,
      // A run's attempts are counted and bounded by BackgroundRuns (BACKGROUND_RUN_MAX_ATTEMPTS), so
      // that a stalled run always comes back to be ended with its status.
      maxStalledCount: Number.MAX_SAFE_INTEGER,
    });
    this.worker.on("error", (error) => {
      // A lock that could not be renewed is reported as lost (below), once per run; should BullMQ
      // word it otherwise, it is only reported twice.
      if (!error.message.startsWith("could not renew lock for job")) this.report(error);
    });
    // The job's lock could not be renewed: this worker was away past BACKGROUND_RUN_LEASE, and
    // BullMQ has given the job to another attempt.
    this.worker.on("lockRenewalFailed", (jobIds) => {
      for (const runId of jobIds) this.lost(runId);
    });
  }

  private lost(runId: string): void {
    const held = this.held.get(runId);
    if (held) loseRun(held, runId, this.options.logger);
  }

  wake(): void {
    // BullMQ's workers are told of new jobs by Redis.
  }

  private async process(job: Job<RunJob>, token: string, execute: Execute): Promise<void> {
    const data: RunJob = { ...job.data };
    // An earlier attempt of this run still executes here: BullMQ has given the job out again, so that
    // attempt's lock ran out while this worker was away (its reply to the fetch was waiting for it).
    // That attempt is stopped; this one waits until it is gone, as BullMQ keeps one lock per job in a
    // worker, and the earlier attempt's end would let go of this one's.
    if (this.held.has(data.runId)) {
      this.lost(data.runId);
      await this.later(job, token, data, Date.now() + this.options.pollMs);
    }
    const turn = await this.turn(data);
    // Taken out of the queue while it waited: done, its job removed as it completes.
    if (turn === "removed") {
      await this.connection.del(this.claimKey(data.runId));
      return;
    }
    if (turn === "wait") await this.later(job, token, data, Date.now() + this.options.pollMs);
    const held: Held = { control: new AbortController(), handingBack: false, ending: false, started: false, lost: false };
    this.held.set(data.runId, held);
    try {
      const run: ClaimedRun = {
        runId: data.runId,
        userId: data.userId,
        threadId: data.threadId,
        attempt: job.attemptsStarted - data.uncounted,
        caller: data.caller,
        base: data.base,
      };
      const execution: Execution = {
        control: held.control,
        // The worker's connection queues its commands while Redis is away: the check is bounded.
        writesEnd: () => {
          const renew = () => atMost(job.extendLock(token, this.options.leaseMs).then((renewed) => renewed === 1), Math.min(this.options.leaseMs, END_CHECK_WAIT_MS), true);
          return confirmEnd(held, renew, data.runId, this.options.logger);
        },
        ...executionState(held),
        started: async (base) => {
          if (held.lost || (await this.startScript(this.claimKey(data.runId), CLAIM_TTL_MS)) !== 1) return false;
          held.started = true;
          if (data.base === null) {
            data.base = base;
            await job.updateData(data);
          }
          return true;
        },
      };
      const outcome = await execute(run, execution);
      // The job is another worker's: nothing of it is this one's to move or end (BullMQ lets a job
      // go untouched on WaitingError, as for one its processor moved itself).
      if (held.lost) throw new WaitingError();
      if (held.handingBack) {
        data.uncounted++;
        await job.updateData(data);
        // Waiting again: its claim goes (a removed mark set while it had not started stays).
        if (held.started) await this.connection.del(this.claimKey(data.runId));
        await job.moveToWait(token);
        throw new WaitingError();
      }
      // It did not start: a removed mark set meanwhile stays for its next turn.
      if (outcome === "busy") await this.later(job, token, data, Date.now() + this.options.pollMs);
      await this.leave(data);
    } finally {
      if (this.held.get(data.runId) === held) this.held.delete(data.runId);
    }
  }

  /** Back to wait until `at`, not counted as an attempt. */
  private async later(job: Job<RunJob>, token: string, data: RunJob, at: number): Promise<never> {
    data.uncounted++;
    await job.updateData(data);
    await job.moveToDelayed(at, token);
    throw new DelayedError();
  }

  /**
   * Whether the run goes on ("go": first of its thread's runs, or executing since an earlier attempt),
   * waits ("wait") or is dropped ("removed": taken out of the queue). A first entry whose job is gone
   * or finished (its end was not recorded: Redis went away at that moment) is dropped and the next
   * looked at.
   */
  private async turn(data: RunJob): Promise<"go" | "removed" | "wait"> {
    const key = this.threadKey(data.userId, data.threadId);
    for (;;) {
      const claim = String(await this.turnScript(this.claimKey(data.runId), key, data.runId));
      if (claim === "removed") return claim;
      if (claim === "executing" || claim === "turn") return "go";
      const first = claim.slice("first:".length);
      const blocker = await this.queue.getJob(first);
      const state = blocker ? await blocker.getState() : "unknown";
      if (state !== "completed" && state !== "failed" && state !== "unknown") return "wait";
      await this.connection.zrem(key, first);
    }
  }

  /**
   * The run left the queue: out of its thread's order (its claim with it, unless `unclaim` is false:
   * a removed run's mark stays for the worker that still holds its job), and the thread's next run
   * promoted if it waits only for its turn.
   */
  private async leave(data: RunJob, unclaim = true): Promise<void> {
    const key = this.threadKey(data.userId, data.threadId);
    await this.connection.zrem(key, data.runId);
    if (unclaim) await this.connection.del(this.claimKey(data.runId));
    const [next] = await this.connection.zrange(key, 0, 0);
    if (next === undefined) return;
    const job = await this.queue.getJob(next);
    if (job && job.data.availableAt <= Date.now() && (await job.isDelayed())) await job.promote().catch(() => undefined);
  }

  stopClaiming(): void {
    void this.worker?.pause(true).catch(() => undefined);
  }

  handBack(): Promise<void> {
    this.handedBack ??= (async () => {
      this.stopClaiming();
      for (const held of this.held.values()) handBackRun(held);
      if (this.worker) await atMost(this.worker.close(), CLOSE_WAIT_MS, undefined);
    })();
    return this.handedBack;
  }

  async close(): Promise<void> {
    await this.handBack();
    await atMost(this.queue.close(), CLOSE_WAIT_MS, undefined);
    this.connection.disconnect();
    this.workerConnection?.disconnect();
  }
}
