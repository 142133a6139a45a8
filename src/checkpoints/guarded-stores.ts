import type { DatabaseGate } from "./guarded-saver.ts";
import type { ClaimOutcome, IdempotencyStore, StoredAnswer } from "./idempotency-store.ts";
import type { LeaseStore } from "./leases.ts";
import type { OpenedThread, PlatformRecords, PlatformRun, PlatformThread, RunBase, RunStatus, RunWithThread, ThreadChanges, ThreadFilters, ThreadSearch, ThreadStatus } from "./platform-records.ts";
import type { NewQueuedRun, QueuedRun, RunQueueStore } from "./run-queue.ts";
import type { ListedConversation, ThreadIndex, ThreadOwner, ThreadPage, ThreadPosition, ThreadSummary } from "./thread-index.ts";

/** The conversation list behind the database gate: unavailable until set up, database failures as DatabaseUnavailableError. */
export class GuardedThreadIndex implements ThreadIndex {
  constructor(private readonly gate: DatabaseGate) {}

  touch(storageKey: string, owner: ThreadOwner, summary: ThreadSummary, now: number): Promise<void> {
    return this.gate.run(({ threads }) => threads.touch(storageKey, owner, summary, now));
  }

  list(userId: string, agentId: string, offset: number, limit: number): Promise<ThreadPage> {
    return this.gate.run(({ threads }) => threads.list(userId, agentId, offset, limit));
  }

  listAfter(userId: string, agentId: string, after: ThreadPosition, limit: number): Promise<ThreadPage> {
    return this.gate.run(({ threads }) => threads.listAfter(userId, agentId, after, limit));
  }

  fill(storageKey: string, summary: ThreadSummary): Promise<void> {
    return this.gate.run(({ threads }) => threads.fill(storageKey, summary));
  }

  deleteThread(storageKey: string): Promise<void> {
    return this.gate.run(({ threads }) => threads.deleteThread(storageKey));
  }

  updatedWithin(from: number, to: number, limit: number): Promise<ListedConversation[]> {
    return this.gate.run(({ threads }) => threads.updatedWithin(from, to, limit));
  }

  updatedAt(storageKey: string): Promise<number | undefined> {
    return this.gate.run(({ threads }) => threads.updatedAt(storageKey));
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

  deleteThread(threadId: string): Promise<void> {
    return this.gate.run(({ idempotency }) => idempotency.deleteThread(threadId));
  }
}

/** The Platform API's records behind the same gate. */
export class GuardedPlatformRecords implements PlatformRecords {
  constructor(private readonly gate: DatabaseGate) {}

  createThread(thread: Omit<PlatformThread, "updatedAt">): Promise<PlatformThread | undefined> {
    return this.gate.run(({ platform }) => platform.createThread(thread));
  }

  getThread(userId: string, threadId: string): Promise<PlatformThread | undefined> {
    return this.gate.run(({ platform }) => platform.getThread(userId, threadId));
  }

  openThread(thread: Omit<PlatformThread, "updatedAt">, conversationKeys: readonly string[]): Promise<OpenedThread | undefined> {
    return this.gate.run(({ platform }) => platform.openThread(thread, conversationKeys));
  }

  updateThread(userId: string, threadId: string, changes: ThreadChanges): Promise<PlatformThread | undefined> {
    return this.gate.run(({ platform }) => platform.updateThread(userId, threadId, changes));
  }

  deleteThread(userId: string, threadId: string): Promise<boolean> {
    return this.gate.run(({ platform }) => platform.deleteThread(userId, threadId));
  }

  deleteFinishedRuns(cutoff: number, limit: number): Promise<number> {
    return this.gate.run(({ platform }) => platform.deleteFinishedRuns(cutoff, limit));
  }

  expiredThreads(now: number, defaultTtlMs: number | null, from: number, limit: number): Promise<PlatformThread[]> {
    return this.gate.run(({ platform }) => platform.expiredThreads(now, defaultTtlMs, from, limit));
  }

  searchThreads(userId: string, search: ThreadSearch): Promise<PlatformThread[]> {
    return this.gate.run(({ platform }) => platform.searchThreads(userId, search));
  }

  countThreads(userId: string, search: ThreadFilters): Promise<number> {
    return this.gate.run(({ platform }) => platform.countThreads(userId, search));
  }

  putRun(run: PlatformRun): Promise<void> {
    return this.gate.run(({ platform }) => platform.putRun(run));
  }

  runHandedBack(userId: string, threadId: string, runId: string, now: number): Promise<boolean> {
    return this.gate.run(({ platform }) => platform.runHandedBack(userId, threadId, runId, now));
  }

  setRunStatus(userId: string, threadId: string, runId: string, status: RunStatus, now: number, base?: RunBase): Promise<PlatformRun | undefined> {
    return this.gate.run(({ platform }) => platform.setRunStatus(userId, threadId, runId, status, now, base));
  }

  runStarted(run: PlatformRun, accepted: boolean): Promise<void> {
    return this.gate.run(({ platform }) => platform.runStarted(run, accepted));
  }

  runEnded(userId: string, threadId: string, runId: string, status: RunStatus, threadStatus: ThreadStatus, now: number): Promise<void> {
    return this.gate.run(({ platform }) => platform.runEnded(userId, threadId, runId, status, threadStatus, now));
  }

  getRun(userId: string, threadId: string, runId: string): Promise<PlatformRun | undefined> {
    return this.gate.run(({ platform }) => platform.getRun(userId, threadId, runId));
  }

  getRunWithThread(userId: string, threadId: string, runId: string): Promise<RunWithThread | undefined> {
    return this.gate.run(({ platform }) => platform.getRunWithThread(userId, threadId, runId));
  }

  listRuns(userId: string, threadId: string, page: { readonly offset: number; readonly limit: number; readonly status?: RunStatus }): Promise<PlatformRun[]> {
    return this.gate.run(({ platform }) => platform.listRuns(userId, threadId, page));
  }

  deleteRun(userId: string, threadId: string, runId: string): Promise<boolean> {
    return this.gate.run(({ platform }) => platform.deleteRun(userId, threadId, runId));
  }
}

/** The background runs' queue behind the same gate. */
export class GuardedRunQueue implements RunQueueStore {
  constructor(private readonly gate: DatabaseGate) {}

  add(run: NewQueuedRun): Promise<void> {
    return this.gate.run(({ runQueue }) => runQueue.add(run));
  }

  claim(owner: string, now: number, leaseUntil: number, limit: number): Promise<QueuedRun[]> {
    return this.gate.run(({ runQueue }) => runQueue.claim(owner, now, leaseUntil, limit));
  }

  started(runId: string, owner: string, base: string): Promise<boolean> {
    return this.gate.run(({ runQueue }) => runQueue.started(runId, owner, base));
  }

  renew(runId: string, owner: string, leaseUntil: number): Promise<boolean> {
    return this.gate.run(({ runQueue }) => runQueue.renew(runId, owner, leaseUntil));
  }

  release(runId: string, owner: string, availableAt: number, uncount: boolean): Promise<void> {
    return this.gate.run(({ runQueue }) => runQueue.release(runId, owner, availableAt, uncount));
  }

  remove(runId: string, owner?: string): Promise<boolean> {
    return this.gate.run(({ runQueue }) => runQueue.remove(runId, owner));
  }

  removeQueued(runId: string): Promise<boolean> {
    return this.gate.run(({ runQueue }) => runQueue.removeQueued(runId));
  }

  onThread(userId: string, threadId: string): Promise<QueuedRun[]> {
    return this.gate.run(({ runQueue }) => runQueue.onThread(userId, threadId));
  }

  depth(): Promise<{ queued: number; running: number }> {
    return this.gate.run(({ runQueue }) => runQueue.depth());
  }
}

/** The leases behind the same gate. */
export class GuardedLeases implements LeaseStore {
  constructor(private readonly gate: DatabaseGate) {}

  take(name: string, holder: string, ttlMs: number, now: number): Promise<boolean> {
    return this.gate.run(({ leases }) => leases.take(name, holder, ttlMs, now));
  }

  give(name: string, holder: string): Promise<void> {
    return this.gate.run(({ leases }) => leases.give(name, holder));
  }
}
