import { WaitQueue } from "./wait-queue.ts";

/**
 * Per-worker admission: at most `maxActive` requests at once; up to `maxWaiters` more may wait
 * `waitMs` for a slot. Everything else is refused at once (the caller answers 503 service_busy).
 */
export class AdmissionLimiter {
  private active = 0;
  private readonly queue: WaitQueue;

  constructor(
    private readonly maxActive: number,
    maxWaiters: number,
    waitMs: number,
  ) {
    this.queue = new WaitQueue({ waitMs, maxWaiters });
  }

  get activeCount(): number {
    return this.active;
  }

  get waitingCount(): number {
    return this.queue.length;
  }

  /** Resolves to a release function, or to undefined when the request must be refused. */
  async acquire(signal?: AbortSignal): Promise<(() => void) | undefined> {
    if (this.active < this.maxActive) {
      this.active++;
      return this.releaser();
    }
    // A granted waiter inherits the slot of the request that released it.
    return (await this.queue.wait(signal)) === "granted" ? this.releaser() : undefined;
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (!this.queue.handOff()) this.active--;
    };
  }
}
