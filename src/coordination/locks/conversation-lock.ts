import type { QueueBounds, WaitOutcome } from "../../admission/wait-queue.ts";

/**
 * The per-conversation lock: one request at a time per storage key, across whatever scope the
 * implementation covers (one worker, one host's workers through the primary, or every host through
 * Redis). Waiting follows THREAD_QUEUE_TIMEOUT and THREAD_QUEUE_MAX_WAITERS in every implementation.
 */
export interface LockLease {
  /** Aborts if the lock is lost while held (e.g. a Redis lease that could not be extended). */
  readonly lost: AbortSignal;
  /** Milliseconds spent waiting before the lock was granted; exactly 0 when it was free at once. */
  readonly waitedMs: number;
  release(): Promise<void>;
}

export type LockOutcome =
  | { readonly ok: true; readonly lease: LockLease }
  | { readonly ok: false; readonly reason: Exclude<WaitOutcome, "granted"> };

export interface ConversationLock {
  /**
   * Try to take the lock for `key`, waiting at most the configured queue time; `waits` false refuses
   * a held lock at once (`busy`), whatever the queue time.
   */
  acquire(key: string, signal?: AbortSignal, waits?: boolean): Promise<LockOutcome>;
  /** Resolves when the coordination service answers; rejects otherwise (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** THREAD_QUEUE_TIMEOUT (as `waitMs`; 0 refuses a busy conversation at once) and THREAD_QUEUE_MAX_WAITERS. */
export type LockQueuePolicy = QueueBounds;
