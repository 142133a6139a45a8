import type { ConversationLock, LockOutcome, LockQueuePolicy } from "./conversation-lock.ts";
import { KeyedFifoLock } from "./keyed-fifo-lock.ts";

/** ConversationLock for a single worker (tests, one-process runs). */
export class MemoryConversationLock implements ConversationLock {
  private readonly table: KeyedFifoLock;

  constructor(policy: LockQueuePolicy) {
    this.table = new KeyedFifoLock(policy);
  }

  async acquire(key: string, signal?: AbortSignal, waits = true): Promise<LockOutcome> {
    const { outcome, waitedMs } = await this.table.acquire(key, signal, waits);
    if (outcome !== "granted") return { ok: false, reason: outcome };
    let released = false;
    return {
      ok: true,
      lease: {
        lost: new AbortController().signal,
        waitedMs,
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
