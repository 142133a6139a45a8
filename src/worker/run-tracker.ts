import type { LockDecorator } from "../admission/locks/lock-decorator.ts";

/**
 * Stalled-run detection for liveness. Every run holds a conversation lease from just before it
 * starts until its promise settles (the route releases it in `finally`), so a lease whose run
 * signal aborted (deadline, client gone, lock lost) but which is still held after `stallMs` belongs
 * to a run that will not finish aborting. One such run makes the worker not live: `/health/live`
 * answers 503 and the primary replaces the worker.
 */
export class RunTracker {
  /** Abort time (performance.now) of each held lease whose run was told to stop. */
  private readonly aborting = new Map<object, number>();

  constructor(private readonly stallMs: number) {}

  /** Runs aborted longer than the bound ago and still holding their lease. */
  stalledCount(now = performance.now()): number {
    let count = 0;
    for (const since of this.aborting.values()) if (now - since >= this.stallMs) count++;
    return count;
  }

  isLive(): boolean {
    return this.stalledCount() === 0;
  }

  /** Decorates the conversation lock: each lease is watched from its run's abort until its release. */
  readonly watchLeases: LockDecorator = (acquire) => async (key, signal) => {
    const outcome = await acquire(key, signal);
    if (!outcome.ok) return outcome;
    const { lease } = outcome;
    const token = {};
    const run = signal ? AbortSignal.any([signal, lease.lost]) : lease.lost;
    const onAbort = () => this.aborting.set(token, performance.now());
    if (run.aborted) onAbort();
    else run.addEventListener("abort", onAbort, { once: true });
    return {
      ok: true,
      lease: {
        lost: lease.lost,
        waitedMs: lease.waitedMs,
        release: () => {
          run.removeEventListener("abort", onAbort);
          this.aborting.delete(token);
          return lease.release();
        },
      },
    };
  };
}
