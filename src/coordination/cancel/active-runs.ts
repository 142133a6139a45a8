import { RunAborted } from "../../errors/classify.ts";

interface ActiveRun {
  readonly runId: string;
  readonly control: AbortController;
}

/**
 * The runs of this process that hold a conversation, by storage key: what a cancel stops. A run
 * enters once it holds its conversation and leaves when it settles; at most one run holds a
 * conversation, so one entry per key.
 */
export class ActiveRuns {
  private readonly runs = new Map<string, ActiveRun>();
  /** Called when the last run leaves (settled()). */
  private emptied: Array<() => void> = [];

  /** Record `runId` as the run holding `key`; returns the function that removes it again. */
  enter(key: string, runId: string, control: AbortController): () => void {
    const entry: ActiveRun = { runId, control };
    this.runs.set(key, entry);
    return () => {
      if (this.runs.get(key) !== entry) return;
      this.runs.delete(key);
      if (this.runs.size === 0 && this.emptied.length > 0) {
        const waiting = this.emptied;
        this.emptied = [];
        for (const resolve of waiting) resolve();
      }
    };
  }

  /** Stop every run here (a worker's drain when its grace ran out); returns how many were stopped. */
  stopAll(reason: RunAborted): number {
    let stopped = 0;
    for (const { control } of this.runs.values()) {
      if (control.signal.aborted) continue;
      control.abort(reason);
      stopped++;
    }
    return stopped;
  }

  /** Resolves once no run holds a conversation here. */
  settled(): Promise<void> {
    if (this.runs.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.emptied.push(resolve));
  }

  /** Stop the run holding `key` here, if one does; returns its run id. */
  stop(key: string): string | undefined {
    const entry = this.runs.get(key);
    if (!entry) return undefined;
    if (!entry.control.signal.aborted) entry.control.abort(new RunAborted("cancelled"));
    return entry.runId;
  }

  get size(): number {
    return this.runs.size;
  }
}
