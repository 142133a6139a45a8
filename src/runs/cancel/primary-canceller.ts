import type { Channel, ToPrimary, ToWorker } from "../../cluster/protocol.ts";
import type { ActiveRuns } from "./active-runs.ts";
import type { RunCanceller } from "./run-canceller.ts";

/** Past the primary's own wait (cluster/cancel-broker.ts): a primary that never answers means nothing was stopped. */
const ANSWER_TIMEOUT_MS = 2_000;

/**
 * Cancels across the workers of one host through the primary: the run may hold its conversation on
 * any worker, so the primary asks each to stop it (cluster/cancel-broker.ts). This side also answers
 * the primary's stop requests from the worker's own runs.
 */
export class PrimaryRunCanceller implements RunCanceller {
  private nextId = 1;
  private readonly pending = new Map<number, (runId: string | undefined) => void>();

  constructor(
    private readonly channel: Channel<ToWorker, ToPrimary>,
    private readonly active: ActiveRuns,
  ) {
    channel.onMessage((message) => {
      if (message.ah === "run.stop") {
        const runId = this.active.stop(message.key) ?? null;
        this.send({ ah: "run.stopped", id: message.id, runId });
      } else if (message.ah === "run.cancelled") {
        this.pending.get(message.id)?.(message.runId ?? undefined);
      }
    });
    channel.onClose(() => {
      for (const done of this.pending.values()) done(undefined);
    });
  }

  cancel(key: string): Promise<string | undefined> {
    // A run on this worker is stopped at once; the primary then finds no other.
    const here = this.active.stop(key);
    if (here !== undefined) return Promise.resolve(here);
    const id = this.nextId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(undefined), ANSWER_TIMEOUT_MS);
      const done = (runId: string | undefined) => {
        clearTimeout(timer);
        this.pending.delete(id);
        resolve(runId);
      };
      this.pending.set(id, done);
      if (!this.send({ ah: "run.cancel", id, key })) done(undefined);
    });
  }

  private send(message: ToPrimary): boolean {
    try {
      this.channel.send(message);
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {}
}
