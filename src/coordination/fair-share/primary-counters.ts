import { ChannelRequests } from "../channel-requests.ts";
import type { Channel, ToPrimary, ToWorker } from "../protocol.ts";
import type { FairShareAsk, FairShareCounters, FairShareVerdict } from "./counters.ts";

/** How long a worker waits for the primary's verdict before calling the counters unavailable. */
const REPLY_TIMEOUT_MS = 5_000;

/** The request a reply from the primary answers, if it is one of the fair share's. */
function fairShareReply(message: ToWorker): number | undefined {
  return message.ah === "fair.verdict" || message.ah === "fair.released" ? message.id : undefined;
}

/**
 * A cluster worker's fair share without Redis: the primary keeps the counters for every worker of
 * the host (fair-share-broker.ts), asked over IPC. An admit is one request and reply; a release and
 * a run's tokens are acknowledged, so a caller answered after its run never finds its own slot still
 * taken, or its tokens not yet counted, on another worker. A slot granted after its admit was given
 * up (no answer in time) is given back at once.
 */
export class PrimaryFairShareCounters implements FairShareCounters {
  private readonly requests: ChannelRequests<ToWorker, ToPrimary>;
  /** Admits given up before their answer came: request id → the slot each would take. */
  private readonly abandoned = new Map<number, FairShareAsk["run"] & { readonly user: string }>();

  constructor(channel: Channel<ToWorker, ToPrimary>) {
    this.requests = new ChannelRequests(channel, fairShareReply, (late) => {
      if (late.ah !== "fair.verdict") return;
      const slot = this.abandoned.get(late.id);
      this.abandoned.delete(late.id);
      if (slot && late.verdict.admitted) void this.release(slot.user, slot.id).catch(() => {});
    });
  }

  async admit(ask: FairShareAsk): Promise<FairShareVerdict> {
    const reply = await this.requests.request((id) => ({ ah: "fair.admit", id, ask }), {
      timeoutMs: REPLY_TIMEOUT_MS,
      abandon: (id) => {
        if (ask.run) this.abandoned.set(id, { ...ask.run, user: ask.user });
      },
    });
    if (reply.ah !== "fair.verdict") throw new Error(`the primary answered a fair-share request with ${reply.ah}`);
    return reply.verdict;
  }

  async release(user: string, id: string): Promise<void> {
    await this.requests.request((request) => ({ ah: "fair.release", id: request, user, slot: id }), { timeoutMs: REPLY_TIMEOUT_MS });
  }

  async charge(user: string, tokens: number): Promise<void> {
    await this.requests.request((id) => ({ ah: "fair.charge", id, user, tokens }), { timeoutMs: REPLY_TIMEOUT_MS });
  }

  async close(): Promise<void> {}
}
