import type { ConversationLock, LockOutcome, LockQueuePolicy } from "./conversation-lock.ts";

interface Entry {
  waiters: Array<(granted: boolean) => void>;
}

/**
 * Fair FIFO key lock held in this process. It covers one worker; it is also the lock table the
 * primary keeps when it brokers locks for its workers.
 */
export class KeyedFifoLock {
  private readonly held = new Map<string, Entry>();

  constructor(private readonly policy: LockQueuePolicy) {}

  get heldCount(): number {
    return this.held.size;
  }

  isHeld(key: string): boolean {
    return this.held.has(key);
  }

  /** Requests queued for `key` behind its holder. */
  waitingFor(key: string): number {
    return this.held.get(key)?.waiters.length ?? 0;
  }

  async acquire(key: string, signal?: AbortSignal): Promise<"granted" | "busy" | "queue_full" | "wait_expired" | "aborted"> {
    const entry = this.held.get(key);
    if (!entry) {
      this.held.set(key, { waiters: [] });
      return "granted";
    }
    if (this.policy.waitMs <= 0) return "busy";
    if (entry.waiters.length >= this.policy.maxWaiters) return "queue_full";
    if (signal?.aborted) return "aborted";
    return new Promise((resolve) => {
      const settle = (outcome: "granted" | "wait_expired" | "aborted") => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        resolve(outcome);
      };
      const waiter = (granted: boolean) => settle(granted ? "granted" : "wait_expired");
      const leave = (outcome: "wait_expired" | "aborted") => {
        const index = entry.waiters.indexOf(waiter);
        if (index >= 0) entry.waiters.splice(index, 1);
        settle(outcome);
      };
      const onAbort = () => leave("aborted");
      const timer = setTimeout(() => leave("wait_expired"), this.policy.waitMs);
      signal?.addEventListener("abort", onAbort, { once: true });
      entry.waiters.push(waiter);
    });
  }

  /** Hand the lock to the next waiter, or free it. */
  release(key: string): void {
    const entry = this.held.get(key);
    if (!entry) return;
    const next = entry.waiters.shift();
    if (next) next(true);
    else this.held.delete(key);
  }
}

/** ConversationLock for a single worker (tests, one-process runs). */
export class MemoryConversationLock implements ConversationLock {
  private readonly table: KeyedFifoLock;

  constructor(policy: LockQueuePolicy) {
    this.table = new KeyedFifoLock(policy);
  }

  async acquire(key: string, signal?: AbortSignal): Promise<LockOutcome> {
    const started = performance.now();
    const free = !this.table.isHeld(key);
    const outcome = await this.table.acquire(key, signal);
    if (outcome !== "granted") return { ok: false, reason: outcome };
    let released = false;
    return {
      ok: true,
      lease: {
        lost: new AbortController().signal,
        // 0 exactly when the lock was free: the metrics count a positive wait as a queue wait.
        waitedMs: free ? 0 : performance.now() - started,
        release: async () => {
          if (released) return;
          released = true;
          this.table.release(key);
        },
      },
    };
  }

  /** Whether `key` is held and how many wait for it (diagnostics and tests). */
  state(key: string): { held: boolean; waiting: number } {
    return { held: this.table.isHeld(key), waiting: this.table.waitingFor(key) };
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {}
}
