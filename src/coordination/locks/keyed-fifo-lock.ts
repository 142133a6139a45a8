import { WaitQueue, type QueueBounds, type WaitOutcome } from "../../admission/wait-queue.ts";

/** How one acquire ended, and how long it waited: exactly 0 when the key was free at once. */
export interface KeyedAcquire {
  readonly outcome: WaitOutcome;
  readonly waitedMs: number;
}

/**
 * One holder per key, in this process, with a bounded FIFO queue behind each held key. It is the
 * table of the in-process conversation lock and of the primary's lock broker.
 */
export class KeyedFifoLock {
  /** Held keys, each with the queue of those waiting for it. */
  private readonly held = new Map<string, WaitQueue>();

  constructor(private readonly bounds: QueueBounds) {}

  get heldCount(): number {
    return this.held.size;
  }

  isHeld(key: string): boolean {
    return this.held.has(key);
  }

  /** Every key held now (each may have waiters). */
  heldKeys(): string[] {
    return [...this.held.keys()];
  }

  /** Requests queued for `key` behind its holder. */
  waitingFor(key: string): number {
    return this.held.get(key)?.length ?? 0;
  }

  /** Take `key`, or wait for it in its queue (`waits` false: refuse a held key at once, `busy`). */
  async acquire(key: string, signal?: AbortSignal, waits = true): Promise<KeyedAcquire> {
    const queue = this.held.get(key);
    if (!queue) {
      this.held.set(key, new WaitQueue(this.bounds));
      return { outcome: "granted", waitedMs: 0 };
    }
    const started = performance.now();
    const outcome = await queue.wait(signal, waits);
    // A grant after queueing always reports a positive wait: the metrics count those as queue waits.
    return { outcome, waitedMs: Math.max(performance.now() - started, 0.001) };
  }

  /** Hand the key to its oldest waiter, or free it. */
  release(key: string): void {
    const queue = this.held.get(key);
    if (queue && !queue.handOff()) this.held.delete(key);
  }
}
