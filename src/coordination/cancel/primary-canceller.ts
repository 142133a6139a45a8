import type { Channel, ToPrimary, ToWorker } from "../protocol.ts";
import { ChannelRequests } from "../channel-requests.ts";
import type { ActiveRuns } from "./active-runs.ts";
import type { RunCanceller } from "./run-canceller.ts";

/** Past the primary's own wait (cancel-broker.ts): a primary that never answers means nothing was stopped. */
const ANSWER_TIMEOUT_MS = 2_000;

/**
 * Cancels across the workers of one host through the primary: the run may hold its conversation on
 * any worker, so the primary asks each to stop it (cancel-broker.ts). This side also answers
 * the primary's stop requests from the worker's own runs.
 */
export class PrimaryRunCanceller implements RunCanceller {
  private readonly requests: ChannelRequests<ToWorker, ToPrimary>;

  constructor(
    channel: Channel<ToWorker, ToPrimary>,
    private readonly active: ActiveRuns,
  ) {
    this.requests = new ChannelRequests(channel, (message) => (message.ah === "run.cancelled" ? message.id : undefined));
    channel.onMessage((message) => {
      if (message.ah !== "run.stop") return;
      const runId = this.active.stop(message.key) ?? null;
      this.requests.send({ ah: "run.stopped", id: message.id, runId });
    });
  }

  async cancel(key: string): Promise<string | undefined> {
    // A run on this worker is stopped at once; the primary then finds no other.
    const here = this.active.stop(key);
    if (here !== undefined) return here;
    try {
      const reply = await this.requests.request((id) => ({ ah: "run.cancel", id, key }), { timeoutMs: ANSWER_TIMEOUT_MS });
      return reply.ah === "run.cancelled" ? (reply.runId ?? undefined) : undefined;
    } catch {
      // The primary is gone or did not answer: nothing was stopped.
      return undefined;
    }
  }

  async close(): Promise<void> {}
}
