import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { NewQueuedRun, QueuedRun, RunQueueStore } from "../checkpoints/run-queue.ts";
import type { Logger } from "../observability/logger.ts";
import { confirmEnd, executionState, handBackRun, loseRun, type Execute, type Execution, type LosableRun, type RunQueueEngine } from "./run-queue-engine.ts";

export interface DatabaseEngineOptions {
  /** BACKGROUND_RUN_LEASE, in milliseconds. */
  readonly leaseMs: number;
  /** BACKGROUND_POLL_INTERVAL, in milliseconds. */
  readonly pollMs: number;
  readonly logger: Logger;
}

/** One run this worker executes: how to stop it, and what became of its claim. */
interface Held extends LosableRun {
  done?: Promise<void>;
}

/**
 * The run queue in the checkpoint database (src/checkpoints/run-queue.ts): the SQLite file every
 * worker of a host shares, or PostgreSQL for a fleet; in the process for the memory backend. A
 * worker claims a run under a lease it renews every third of BACKGROUND_RUN_LEASE; a worker that
 * dies leaves its lease to run out, and the next claim takes the run again. Claims are made when a
 * run is accepted on this worker, when one of its runs ends, and every BACKGROUND_POLL_INTERVAL.
 */
export class DatabaseRunQueue implements RunQueueEngine {
  readonly name = "database";
  /** This worker's name on the leases it holds. */
  private readonly owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly held = new Map<string, Held>();
  private execute: Execute | undefined;
  private slots = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private pumping = false;
  private again = false;
  private lastClaimError = 0;

  constructor(
    private readonly store: RunQueueStore,
    private readonly options: DatabaseEngineOptions,
  ) {}

  add(run: NewQueuedRun): Promise<void> {
    return this.store.add(run);
  }

  async onThread(userId: string, threadId: string): Promise<string[]> {
    return (await this.store.onThread(userId, threadId)).map((run) => run.runId);
  }

  removeQueued(runId: string): Promise<boolean> {
    return this.store.removeQueued(runId);
  }

  async depth(): Promise<{ waiting: number; executing: number }> {
    const { queued, running } = await this.store.depth();
    return { waiting: queued, executing: running };
  }

  start(execute: Execute, slots: number): void {
    this.execute = execute;
    this.slots = slots;
    if (slots === 0) return;
    this.timer = setInterval(() => this.wake(), this.options.pollMs);
    this.timer.unref();
    this.wake();
  }

  /** Claim runs while this worker has room (one pass at a time; a call meanwhile asks for another pass). */
  wake(): void {
    if (this.stopped || !this.execute || this.slots === 0) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    void this.fill().finally(() => {
      this.pumping = false;
      if (this.again) {
        this.again = false;
        this.wake();
      }
    });
  }

  private async fill(): Promise<void> {
    while (!this.stopped && this.held.size < this.slots) {
      // As many as there is room for, in one claim: one that finds fewer has emptied what is claimable.
      const room = this.slots - this.held.size;
      let claimed: QueuedRun[];
      try {
        const now = Date.now();
        claimed = await this.store.claim(this.owner, now, now + this.options.leaseMs, room);
      } catch (error) {
        // The database is away: the next pass tries again. One line per minute at most.
        if (Date.now() - this.lastClaimError > 60_000) {
          this.lastClaimError = Date.now();
          this.options.logger.warn({ err_type: (error as Error).name }, "background runs: claiming failed");
        }
        return;
      }
      for (const run of claimed) this.launch(run);
      if (claimed.length < room) return;
    }
  }

  /** Execute a claimed run under its lease; settle its row and free its place (and look for more) when it ends. */
  private launch(run: QueuedRun): void {
    const { store } = this;
    const { leaseMs } = this.options;
    const held: Held = { control: new AbortController(), handingBack: false, ending: false, lost: false };
    // An earlier attempt of this run still executing here: its lease ran out while this worker was
    // away, and this worker has claimed the run again before that attempt heard it. It is stopped.
    const earlier = this.held.get(run.runId);
    if (earlier) loseRun(earlier, run.runId, this.options.logger);
    this.held.set(run.runId, held);
    const renewal = setInterval(() => {
      store.renew(run.runId, this.owner, Date.now() + leaseMs).then(
        (still) => {
          if (!still) loseRun(held, run.runId, this.options.logger);
        },
        () => undefined,
      );
    }, leaseMs / 3);
    const execution: Execution = {
      control: held.control,
      writesEnd: () => confirmEnd(held, () => store.renew(run.runId, this.owner, Date.now() + leaseMs), run.runId, this.options.logger),
      ...executionState(held),
      started: async (base) => {
        if (await store.started(run.runId, this.owner, base)) return true;
        held.lost = true;
        return false;
      },
    };
    held.done = this.execute!(run, execution)
      .then(async (outcome) => {
        clearInterval(renewal);
        if (held.lost) return;
        if (held.handingBack) await store.release(run.runId, this.owner, Date.now(), true);
        else if (outcome === "busy") await store.release(run.runId, this.owner, Date.now() + this.options.pollMs, true);
        else await store.remove(run.runId, this.owner);
      })
      .catch(() => clearInterval(renewal))
      .finally(() => {
        if (this.held.get(run.runId) === held) this.held.delete(run.runId);
        this.wake();
      });
  }

  stopClaiming(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }

  async handBack(): Promise<void> {
    this.stopClaiming();
    for (const held of this.held.values()) handBackRun(held);
    await Promise.allSettled([...this.held.values()].map((held) => held.done));
  }

  async close(): Promise<void> {
    await this.handBack();
  }
}
