/** How long one waiter may wait, and how many may wait at once. */
export interface QueueBounds {
  /** Milliseconds a waiter waits before giving up; 0 or less turns waiting off. */
  readonly waitMs: number;
  readonly maxWaiters: number;
}

/**
 * How a wait ends: `granted` by a hand-off; refused on arrival (`busy` when waiting is off,
 * `queue_full`, or `aborted` when the signal already had); or given up (`wait_expired`, `aborted`).
 */
export type WaitOutcome = "granted" | "busy" | "queue_full" | "wait_expired" | "aborted";

type Settle = (outcome: "granted" | "wait_expired" | "aborted") => void;

/**
 * A bounded first-in-first-out queue of waiters for one thing (a request slot, a conversation). The
 * holder of the thing calls `handOff` when it is done, and the oldest waiter still waiting gets it.
 * A waiter leaves the queue, and holds nothing, the moment its deadline passes or its signal aborts.
 */
export class WaitQueue {
  private readonly waiters: Settle[] = [];

  constructor(private readonly bounds: QueueBounds) {}

  /** Waiters queued now. */
  get length(): number {
    return this.waiters.length;
  }

  /** Wait for a hand-off. The waiter is queued before this returns, so `length` counts it at once. */
  wait(signal?: AbortSignal, waits = true): Promise<WaitOutcome> {
    if (!waits || this.bounds.waitMs <= 0) return Promise.resolve("busy");
    if (this.waiters.length >= this.bounds.maxWaiters) return Promise.resolve("queue_full");
    if (signal?.aborted) return Promise.resolve("aborted");
    return new Promise((resolve) => {
      const settle: Settle = (outcome) => {
        clearTimeout(deadline);
        signal?.removeEventListener("abort", onAbort);
        resolve(outcome);
      };
      const leave = (outcome: "wait_expired" | "aborted") => {
        const index = this.waiters.indexOf(settle);
        if (index >= 0) this.waiters.splice(index, 1);
        settle(outcome);
      };
      const onAbort = () => leave("aborted");
      const deadline = setTimeout(() => leave("wait_expired"), this.bounds.waitMs);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiters.push(settle);
    });
  }

  /**
   * Give the thing to the oldest waiter. Returns false when nobody waits: the caller keeps what it
   * held and frees it. A waiter handed the thing is out of the queue and past its deadline and abort
   * at once, so it owns the thing even if its signal aborts before it resumes.
   */
  handOff(): boolean {
    const next = this.waiters.shift();
    if (!next) return false;
    next("granted");
    return true;
  }
}
