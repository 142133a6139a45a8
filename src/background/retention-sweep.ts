import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { setImmediate as nextTurn, setTimeout as sleep } from "node:timers/promises";
import { INTERRUPT } from "@langchain/langgraph";
import { storageKey } from "../auth/storage-key.ts";
import type { ConversationStore } from "../checkpoints/conversation-store.ts";
import type { IdempotencyStore } from "../checkpoints/idempotency-store.ts";
import type { LeaseStore } from "../checkpoints/leases.ts";
import { threadExpired, type PlatformRecords } from "../checkpoints/platform-records.ts";
import type { ThreadIndex } from "../checkpoints/thread-index.ts";
import type { ConversationLock } from "../coordination/locks/conversation-lock.ts";
import type { Logger } from "../observability/logger.ts";
import type { ServiceMetrics } from "../observability/metrics.ts";
import type { RunQueueEngine } from "./run-queue-engine.ts";

export interface RetentionSettings {
  /** Milliseconds after its last update a conversation is deleted (CONVERSATION_TTL); null: kept, unless its thread has its own `ttl`. */
  readonly ttlMs: number | null;
  readonly intervalMs: number;
  /** Deletions per second at most (RETENTION_MAX_DELETIONS_PER_SECOND). */
  readonly maxPerSecond: number;
  /** Candidates read per pass. */
  readonly batch: number;
  /** Root checkpoints each conversation keeps (CHECKPOINT_KEEP_LATEST); null: all. */
  readonly keepLatest: number | null;
  /** Milliseconds a finished run's record is kept after it ended (RUN_RECORD_TTL). */
  readonly runRecordTtlMs: number;
}

export interface RetentionDependencies {
  readonly settings: RetentionSettings;
  readonly records: PlatformRecords;
  readonly index: ThreadIndex;
  readonly store: ConversationStore;
  readonly idempotency: IdempotencyStore;
  readonly leases: LeaseStore;
  readonly locks: ConversationLock;
  readonly queue: RunQueueEngine;
  readonly logger: Logger;
  readonly metrics: ServiceMetrics;
}

/** Why an expired conversation was left for a later sweep (a metric label). */
export type RetentionSkip = "locked" | "queued" | "interrupted" | "running" | "updated";

/** A conversation that may have expired: a Platform thread, or a conversation of agenthost's own API. */
interface Candidate {
  readonly userId: string;
  /** The public thread id. */
  readonly threadId: string;
  /** Its storage key; null for a Platform thread no run ever bound to an agent (a record only). */
  readonly storageKey: string | null;
  /** The agent of its conversation, when known. */
  readonly agentId: string | null;
}

const LEASE = "retention";

/**
 * Online retention and compaction: every RETENTION_SWEEP_INTERVAL one worker of the whole fleet (the holder of the
 * `retention` lease in the checkpoint database; another takes over within a few intervals when it
 * dies) deletes the conversations whose time ran out: CONVERSATION_TTL after their last update, or a
 * Platform thread's own `ttl`. Each goes whole (checkpoints, writes, message rows, its list entry,
 * its idempotency answers, its Platform thread and run records), one conversation per short
 * transaction, at most RETENTION_MAX_DELETIONS_PER_SECOND spread evenly over each second, with a
 * turn of the event loop between conversations (SQLite's calls are synchronous). A sweep reads on
 * while it finds a full batch, so a backlog goes in one sweep. A conversation that is locked (a run or
 * request holds it), has runs queued, is paused on an interrupt, or is busy is left for a later
 * sweep, and reads go on past it; its expiry is read again under its lock, so one updated meanwhile stays. With
 * CHECKPOINT_KEEP_LATEST, the same sweeper then compacts the conversations updated since its last
 * pass: each keeps its latest N root checkpoints (time travel reaches back that far).
 */
export class RetentionSweeper {
  private readonly holder = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  private closed = false;
  /** When the next deletion may start (performance.now()): deletions are spread evenly under the ceiling. */
  private nextDeletionAt = 0;
  /**
   * Where each candidate read resumes (an updated_at): past the conversations the last pass left
   * (locked, paused, queued), so a full batch of them cannot starve those behind it. A read that
   * comes back short goes back to the start next time, where the skipped ones are tried again.
   */
  private resume = { threads: 0, index: 0 };
  /** Conversations updated at or after this were not compacted yet (by this holder). */
  private compactedUntil = 0;

  constructor(private readonly deps: RetentionDependencies) {}

  start(): void {
    this.timer = setInterval(() => void this.sweep(), this.deps.settings.intervalMs);
    this.timer.unref();
  }

  /** One sweep now (none when one is under way or another worker holds the lease). */
  sweep(): Promise<void> {
    this.sweeping ??= this.sweepOnce()
      .catch((error: unknown) => this.deps.logger.warn({ err_type: (error as Error).name }, "retention sweep failed; the next one tries again"))
      .finally(() => {
        this.sweeping = undefined;
      });
    return this.sweeping;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.sweeping;
    await this.deps.leases.give(LEASE, this.holder).catch(() => undefined);
  }

  private async sweepOnce(): Promise<void> {
    const { settings, records, index, leases, metrics, logger } = this.deps;
    const leaseMs = settings.intervalMs * 3;
    if (this.closed || !(await leases.take(LEASE, this.holder, leaseMs, Date.now()))) return;
    const started = performance.now();
    const now = Date.now();
    const skipped: Partial<Record<RetentionSkip, number>> = {};
    let deleted = 0;
    const consider = async (candidate: Candidate) => {
      if (this.closed) return;
      await this.pace();
      const outcome = await this.erase(candidate, now);
      // SQLite deletes synchronously: let the worker's requests in between conversations.
      await nextTurn();
      if (outcome === "deleted") {
        deleted++;
        metrics.retentionDeleted.inc();
      } else {
        skipped[outcome] = (skipped[outcome] ?? 0) + 1;
        metrics.retentionSkipped.inc({ reason: outcome });
      }
      await leases.take(LEASE, this.holder, leaseMs, Date.now());
    };
    // Each kind is read batch after batch while reads come back full (a backlog goes in one sweep,
    // at the ceiling's pace); a conversation read twice (reads resume at the last one's time) counts once.
    const seen = new Set<string>();
    for (let full = true; full && !this.closed; ) {
      const threads = await records.expiredThreads(now, settings.ttlMs, this.resume.threads, settings.batch);
      this.resume.threads = resumeAfter(threads, settings.batch);
      full = threads.length === settings.batch;
      for (const thread of threads) {
        if (seen.has(`${thread.userId}\0${thread.threadId}`)) continue;
        seen.add(`${thread.userId}\0${thread.threadId}`);
        const key = thread.agentId === null ? null : storageKey(thread.userId, thread.agentId, thread.threadId);
        await consider({ userId: thread.userId, threadId: thread.threadId, storageKey: key, agentId: thread.agentId });
      }
    }
    for (let full = settings.ttlMs !== null; full && !this.closed; ) {
      const listed = await index.updatedWithin(this.resume.index, now - (settings.ttlMs ?? 0), settings.batch);
      this.resume.index = resumeAfter(listed, settings.batch);
      full = listed.length === settings.batch;
      for (const stale of listed) {
        if (seen.has(stale.storageKey)) continue;
        seen.add(stale.storageKey);
        // A Platform thread's record decides (its own ttl, its updates): the pass above.
        const thread = await records.getThread(stale.owner.userId, stale.owner.threadId);
        if (thread && thread.agentId === stale.owner.agentId) continue;
        await consider({ userId: stale.owner.userId, threadId: stale.owner.threadId, storageKey: stale.storageKey, agentId: stale.owner.agentId });
      }
    }
    const compacted = settings.keepLatest === null || this.closed ? 0 : await this.compact(settings.keepLatest, leaseMs);
    // The side tables' own schedules: finished runs' records, expired idempotency answers.
    const runs = this.closed ? 0 : await records.deleteFinishedRuns(Date.now() - settings.runRecordTtlMs, settings.batch);
    if (!this.closed) await this.deps.idempotency.sweep(Date.now());
    if (deleted > 0 || compacted > 0 || runs > 0 || Object.keys(skipped).length > 0) {
      logger.info({ deleted, skipped, compacted, run_records: runs, took_ms: Math.round(performance.now() - started) }, "retention sweep");
    }
  }

  /**
   * Compaction: the conversations updated since the last pass keep only their latest `keep` root
   * checkpoints, each under its lock (taken without waiting: a busy one is compacted next time it
   * changes). Returns how many checkpoints went.
   */
  private async compact(keep: number, leaseMs: number): Promise<number> {
    const { index, locks, store, leases, metrics } = this.deps;
    let removed = 0;
    const changed = await index.updatedWithin(this.compactedUntil, Infinity, this.deps.settings.batch);
    for (const conversation of changed) {
      if (this.closed) break;
      const outcome = await locks.acquire(conversation.storageKey, undefined, false);
      if (!outcome.ok) continue;
      try {
        removed += await store.compact(conversation.storageKey, keep);
      } finally {
        await outcome.lease.release();
      }
      this.compactedUntil = conversation.updatedAt;
      await leases.take(LEASE, this.holder, leaseMs, Date.now());
    }
    // Nothing left to read: the next pass starts from now (rows of the same millisecond come again, harmlessly).
    if (changed.length < this.deps.settings.batch) this.compactedUntil = Math.max(this.compactedUntil, Date.now() - this.deps.settings.intervalMs);
    metrics.checkpointsCompacted.inc(removed);
    return removed;
  }

  /** Delete one expired conversation whole, under its lock, unless something still needs it. */
  private async erase(candidate: Candidate, now: number): Promise<"deleted" | RetentionSkip> {
    const { records, store, idempotency, index, locks, queue, settings } = this.deps;
    const { userId, threadId, storageKey: key } = candidate;
    if (key === null) {
      const thread = await records.getThread(userId, threadId);
      if (!thread || !threadExpired(thread, now, settings.ttlMs) || thread.agentId !== null) return "updated";
      await records.deleteThread(userId, threadId);
      return "deleted";
    }
    const outcome = await locks.acquire(key, undefined, false);
    if (!outcome.ok) return "locked";
    try {
      if ((await queue.onThread(userId, threadId)).length > 0) return "queued";
      const thread = await records.getThread(userId, threadId);
      const platform = thread && thread.agentId === candidate.agentId ? thread : undefined;
      if (platform?.status === "busy") return "running";
      // Read again under the lock: a run or an update since the candidates were read keeps it.
      if (platform && !threadExpired(platform, now, settings.ttlMs)) return "updated";
      const ttl = platform?.ttlMs ?? settings.ttlMs;
      const updatedAt = await index.updatedAt(key);
      if (updatedAt !== undefined && (ttl === null || updatedAt + ttl > now)) return "updated";
      const head = await store.head(key);
      if (head.pendingWrites.some(([, channel]) => channel === INTERRUPT)) return "interrupted";
      await store.clear(key);
      await idempotency.deleteThread(key);
      if (platform) await records.deleteThread(userId, threadId);
      return "deleted";
    } finally {
      await outcome.lease.release();
    }
  }

  /**
   * Wait for this deletion's turn: one every 1/RETENTION_MAX_DELETIONS_PER_SECOND of a second, so
   * the ceiling's deletions are spread over the second rather than made in one burst.
   */
  private async pace(): Promise<void> {
    const now = performance.now();
    const at = Math.max(now, this.nextDeletionAt);
    this.nextDeletionAt = at + 1000 / this.deps.settings.maxPerSecond;
    // A timer waits a millisecond at least: under a high ceiling the turns add up to one first.
    if (at - now >= 1) await sleep(at - now);
  }
}

/**
 * Where the next read of candidates resumes, given this one (least recently updated first): at
 * the last one's updated_at when the read was full (those of that same millisecond come again,
 * harmlessly; past it when the whole batch shares it), back at the start when it was not.
 */
function resumeAfter(read: ReadonlyArray<{ readonly updatedAt: number }>, batch: number): number {
  const first = read[0];
  const last = read.at(-1);
  if (read.length < batch || !first || !last) return 0;
  return first.updatedAt === last.updatedAt ? last.updatedAt + 1 : last.updatedAt;
}
