import type { ConversationLock } from "./conversation-lock.ts";

/** One acquire of a conversation lock: the part of it a decorator wraps. */
export type Acquire = ConversationLock["acquire"];

/**
 * What is added around every acquire of a lock (its metrics, stalled-run tracking): given the
 * acquire beneath it, the decorator returns one that calls it. It may look at the outcome and wrap
 * the lease; readiness and closing are the lock's own and pass through.
 */
export type LockDecorator = (next: Acquire) => Acquire;

/** `lock` with each decorator wrapped around the one before: the first sits next to the lock. */
export function decorateLock(lock: ConversationLock, ...decorators: readonly LockDecorator[]): ConversationLock {
  const innermost: Acquire = (key, signal, waits) => lock.acquire(key, signal, waits);
  return {
    acquire: decorators.reduce((next, decorate) => decorate(next), innermost),
    ping: () => lock.ping(),
    close: () => lock.close(),
  };
}
