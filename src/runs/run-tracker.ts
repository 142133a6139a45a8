/**
 * Stalled-run detection for liveness. The conversation service reports every run from just before
 * it starts until it settles (`watch`), so a run whose signal aborted (deadline, client gone, lock
 * lost) but which has not settled after `stallMs` will not finish aborting. One such run makes the
 * worker not live: `/health/live` answers 503 and the primary replaces the worker.
 */
export class RunTracker {
  /** Abort time (performance.now) of each unsettled run that was told to stop. */
  private readonly aborting = new Map<object, number>();

  constructor(private readonly stallMs: number) {}

  /** Runs aborted longer than the bound ago and still not settled. */
  stalledCount(now = performance.now()): number {
    let count = 0;
    for (const since of this.aborting.values()) if (now - since >= this.stallMs) count++;
    return count;
  }

  isLive(): boolean {
    return this.stalledCount() === 0;
  }

  /** Watch a run from its start; call the returned function when it settles. */
  watch(signal: AbortSignal): () => void {
    const token = {};
    const onAbort = () => this.aborting.set(token, performance.now());
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    return () => {
      signal.removeEventListener("abort", onAbort);
      this.aborting.delete(token);
    };
  }
}
