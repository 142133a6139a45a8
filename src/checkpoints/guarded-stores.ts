import type { DatabaseGate } from "./guarded-saver.ts";
import type { ClaimOutcome, IdempotencyStore, StoredAnswer } from "./idempotency-store.ts";
import type { ThreadIndex, ThreadOwner, ThreadPage, ThreadSummary } from "./thread-index.ts";

/** The conversation list behind the database gate: unavailable until set up, database failures as DatabaseUnavailableError. */
export class GuardedThreadIndex implements ThreadIndex {
  constructor(private readonly gate: DatabaseGate) {}

  touch(storageKey: string, owner: ThreadOwner, summary: ThreadSummary, now: number): Promise<void> {
    return this.gate.run(({ threads }) => threads.touch(storageKey, owner, summary, now));
  }

  list(userId: string, agentId: string, offset: number, limit: number): Promise<ThreadPage> {
    return this.gate.run(({ threads }) => threads.list(userId, agentId, offset, limit));
  }

  fill(storageKey: string, summary: ThreadSummary): Promise<void> {
    return this.gate.run(({ threads }) => threads.fill(storageKey, summary));
  }

  deleteThread(storageKey: string): Promise<void> {
    return this.gate.run(({ threads }) => threads.deleteThread(storageKey));
  }
}

/** The idempotency keys behind the same gate. */
export class GuardedIdempotencyStore implements IdempotencyStore {
  constructor(private readonly gate: DatabaseGate) {}

  claim(scope: string, fingerprint: string, now: number, runningUntil: number, expiresAt: number): Promise<ClaimOutcome> {
    return this.gate.run(({ idempotency }) => idempotency.claim(scope, fingerprint, now, runningUntil, expiresAt));
  }

  complete(scope: string, threadId: string | null, answer: StoredAnswer, expiresAt: number): Promise<void> {
    return this.gate.run(({ idempotency }) => idempotency.complete(scope, threadId, answer, expiresAt));
  }

  release(scope: string): Promise<void> {
    return this.gate.run(({ idempotency }) => idempotency.release(scope));
  }

  sweep(now: number): Promise<void> {
    return this.gate.run(({ idempotency }) => idempotency.sweep(now));
  }
}
