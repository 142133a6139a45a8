/**
 * Per-worker admission: at most `maxActive` requests at once; up to `maxWaiters` more may wait
 * `waitMs` for a slot. Everything else is refused at once (the caller answers 503 service_busy).
 */
export class AdmissionLimiter {
  private active = 0;
  private readonly waiters: Array<(granted: boolean) => void> = [];

  constructor(
    private readonly maxActive: number,
    private readonly maxWaiters: number,
    private readonly waitMs: number,
  ) {}

  get activeCount(): number {
    return this.active;
  }

  get waitingCount(): number {
    return this.waiters.length;
  }

  /** Resolves to a release function, or to undefined when the request must be refused. */
  async acquire(signal?: AbortSignal): Promise<(() => void) | undefined> {
    if (this.active < this.maxActive) return this.grant();
    if (this.waiters.length >= this.maxWaiters || this.waitMs <= 0) return undefined;
    const granted = await new Promise<boolean>((resolve) => {
      const waiter = (ok: boolean) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        resolve(ok);
      };
      const drop = () => {
        const index = this.waiters.indexOf(waiter);
        if (index >= 0) this.waiters.splice(index, 1);
        waiter(false);
      };
      const onAbort = () => drop();
      const timer = setTimeout(drop, this.waitMs);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiters.push(waiter);
    });
    // A granted waiter inherits the slot of the request that released it.
    return granted ? this.releaser() : undefined;
  }

  private grant(): () => void {
    this.active++;
    return this.releaser();
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiters.shift();
      if (next) next(true);
      else this.active--;
    };
  }
}
