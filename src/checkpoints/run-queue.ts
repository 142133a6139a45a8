/**
 * The background runs' queue as the checkpoint database keeps it (the embedded engine): one row per
 * accepted run until it reaches a final status. A row is `queued` (waiting for its time and for the
 * runs before it on its thread) or `running` under a lease that its worker renews; a lease that runs
 * out (its worker died) makes the run claimable again, with its attempt counted. Runs of one thread
 * are claimed one after another in the order they were accepted, whichever worker or host claims
 * them: a row is claimable only when no earlier row of its thread is left.
 */

export const RUN_QUEUE_TABLE = "agenthost_run_queue";

export interface QueuedRun {
  readonly runId: string;
  readonly userId: string;
  readonly threadId: string;
  /** Order of acceptance, across every worker and host. */
  readonly seq: number;
  readonly state: "queued" | "running";
  /** When it may start (after_seconds), milliseconds since the epoch. */
  readonly availableAt: number;
  /** The worker holding it (running), and until when its lease lasts. */
  readonly leaseOwner: string | null;
  readonly leaseUntil: number;
  /** How many times it has been claimed (1 on its first start). */
  readonly attempt: number;
  /** Who asked for it (the principal and the user it named), as JSON: the run executes as them. */
  readonly caller: Record<string, unknown>;
  /**
   * The thread's latest checkpoint when the run first started ("" for none; null before it started):
   * a later attempt that finds another one there continues from it.
   */
  readonly base: string | null;
}

export interface NewQueuedRun {
  readonly runId: string;
  readonly userId: string;
  readonly threadId: string;
  readonly availableAt: number;
  readonly caller: Record<string, unknown>;
}

export interface RunQueueStore {
  add(run: NewQueuedRun): Promise<void>;
  /**
   * Claim the earliest claimable runs, at most `limit`, for `owner` until `leaseUntil`: queued and
   * due, or running with their lease run out; none of their thread's earlier runs left (so at most
   * one per thread). Their attempts are counted. In the order they were accepted; fewer than `limit`
   * when no more are claimable now.
   */
  claim(owner: string, now: number, leaseUntil: number, limit: number): Promise<QueuedRun[]>;
  /**
   * The run has started under `owner`'s claim (it holds its thread and has written nothing yet): its
   * first start notes the thread's latest checkpoint (QueuedRun.base); false when `owner` no longer
   * holds it (taken over, or taken out of the queue before it started).
   */
  started(runId: string, owner: string, base: string): Promise<boolean>;
  /** Extend the lease; false when `owner` no longer holds the run. */
  renew(runId: string, owner: string, leaseUntil: number): Promise<boolean>;
  /** Hand a run back (queued again, due at `availableAt`); `uncount` takes back the attempt its claim counted. */
  release(runId: string, owner: string, availableAt: number, uncount: boolean): Promise<void>;
  /** Remove a run that reached its final status; with `owner`, only while that owner holds it. */
  remove(runId: string, owner?: string): Promise<boolean>;
  /**
   * Remove a run that has not started: queued, or claimed for a first attempt that has not started
   * (it waits for its thread, held by a run of the other kind); false when it is running or gone.
   */
  removeQueued(runId: string): Promise<boolean>;
  /** The thread's runs still in the queue, in order. */
  onThread(userId: string, threadId: string): Promise<QueuedRun[]>;
  /** How many runs are queued (due or not) and running. */
  depth(): Promise<{ queued: number; running: number }>;
}

/** The queue of the memory backend: in this process, lost with it. */
export class MemoryRunQueue implements RunQueueStore {
  private readonly rows = new Map<string, QueuedRun>();
  private seq = 0;

  async add(run: NewQueuedRun): Promise<void> {
    if (this.rows.has(run.runId)) return;
    this.rows.set(run.runId, { ...run, seq: ++this.seq, state: "queued", leaseOwner: null, leaseUntil: 0, attempt: 0, caller: structuredClone(run.caller), base: null });
  }

  async claim(owner: string, now: number, leaseUntil: number, limit: number): Promise<QueuedRun[]> {
    const ordered = [...this.rows.values()].sort((a, b) => a.seq - b.seq);
    const seen = new Set<string>();
    const claimed: QueuedRun[] = [];
    for (const row of ordered) {
      if (claimed.length >= limit) break;
      const thread = JSON.stringify([row.userId, row.threadId]);
      const first = !seen.has(thread);
      seen.add(thread);
      if (!first) continue;
      const due = row.state === "queued" ? row.availableAt <= now : row.leaseUntil < now;
      if (!due) continue;
      const taken: QueuedRun = { ...row, state: "running", leaseOwner: owner, leaseUntil, attempt: row.attempt + 1 };
      this.rows.set(row.runId, taken);
      claimed.push({ ...taken, caller: structuredClone(taken.caller) });
    }
    return claimed;
  }

  async started(runId: string, owner: string, base: string): Promise<boolean> {
    const row = this.rows.get(runId);
    if (row?.leaseOwner !== owner) return false;
    this.rows.set(runId, { ...row, base: row.base ?? base });
    return true;
  }

  async renew(runId: string, owner: string, leaseUntil: number): Promise<boolean> {
    const row = this.rows.get(runId);
    if (!row || row.state !== "running" || row.leaseOwner !== owner) return false;
    this.rows.set(runId, { ...row, leaseUntil });
    return true;
  }

  async release(runId: string, owner: string, availableAt: number, uncount: boolean): Promise<void> {
    const row = this.rows.get(runId);
    if (!row || row.leaseOwner !== owner) return;
    this.rows.set(runId, { ...row, state: "queued", leaseOwner: null, leaseUntil: 0, availableAt, attempt: uncount ? row.attempt - 1 : row.attempt });
  }

  async remove(runId: string, owner?: string): Promise<boolean> {
    const row = this.rows.get(runId);
    if (!row || (owner !== undefined && row.leaseOwner !== owner)) return false;
    return this.rows.delete(runId);
  }

  async removeQueued(runId: string): Promise<boolean> {
    const row = this.rows.get(runId);
    if (!row || (row.state !== "queued" && row.base !== null)) return false;
    return this.rows.delete(runId);
  }

  async onThread(userId: string, threadId: string): Promise<QueuedRun[]> {
    return [...this.rows.values()].filter((row) => row.userId === userId && row.threadId === threadId).sort((a, b) => a.seq - b.seq);
  }

  async depth(): Promise<{ queued: number; running: number }> {
    let queued = 0;
    let running = 0;
    for (const row of this.rows.values()) {
      if (row.state === "queued") queued++;
      else running++;
    }
    return { queued, running };
  }
}
