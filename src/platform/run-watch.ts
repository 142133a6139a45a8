import type { RunStatus } from "../checkpoints/platform-records.ts";

/**
 * Requests waiting for a run's record to change (a join waiting for it to start or end), woken
 * as soon as this process writes that record, with the status it wrote when the writer names it
 * (then the waiter need not read the record again). A run recorded by another worker or host is
 * not seen here: its waiters read its record again when their own timer fires.
 */
export class RunWatch {
  private readonly waiting = new Map<string, Set<(status: RunStatus | undefined) => void>>();

  /** This process has just written the run's record: with `status`, the status it now has. */
  changed(runId: string, status?: RunStatus): void {
    const wakers = this.waiting.get(runId);
    if (!wakers) return;
    this.waiting.delete(runId);
    for (const wake of wakers) wake(status);
  }

  /**
   * A wait for the run's next change here (the status written, when named), or `ms`, whichever
   * comes first (undefined); it rejects when `signal` aborts. It is registered at once, so a change
   * made before it is awaited still ends it: ask for it before reading the record. `cancel` drops
   * it (its promise then never settles).
   */
  next(runId: string, ms: number, signal: AbortSignal): { readonly done: Promise<RunStatus | undefined>; cancel(): void } {
    let wakers = this.waiting.get(runId);
    if (!wakers) this.waiting.set(runId, (wakers = new Set()));
    const set = wakers;
    let settle: ((status: RunStatus | undefined) => void) | undefined;
    let timer: NodeJS.Timeout | undefined;
    const finish = (then?: () => void) => {
      clearTimeout(timer);
      signal.removeEventListener("abort", aborted);
      set.delete(wake);
      if (set.size === 0 && this.waiting.get(runId) === set) this.waiting.delete(runId);
      then?.();
    };
    const wake = (status?: RunStatus) => finish(() => settle?.(status));
    let aborted = () => {};
    const done = new Promise<RunStatus | undefined>((resolve, reject) => {
      settle = resolve;
      aborted = () => finish(() => reject(signal.reason as Error));
    });
    // A wait cancelled after its signal aborted is not awaited: its rejection is not an unhandled one.
    done.catch(() => undefined);
    if (signal.aborted) {
      aborted();
    } else {
      set.add(wake);
      timer = setTimeout(() => wake(), ms);
      signal.addEventListener("abort", aborted, { once: true });
    }
    return { done, cancel: () => finish() };
  }
}
