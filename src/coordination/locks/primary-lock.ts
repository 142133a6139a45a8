import type { Channel, ToPrimary, ToWorker } from "../protocol.ts";
import { ChannelRequests, ReplyTimeout } from "../channel-requests.ts";
import { RunAborted } from "../../errors/classify.ts";
import type { ConversationLock, LockOutcome, LockQueuePolicy } from "./conversation-lock.ts";

/** How long past the queue wait a worker waits for the primary before calling the lock unavailable. */
const BROKER_GRACE_MS = 5_000;
const PING_TIMEOUT_MS = 2_000;

/** The request a reply from the primary answers, if it is one of the lock's. */
function lockReply(message: ToWorker): number | undefined {
  return message.ah === "lock.result" || message.ah === "lock.released" || message.ah === "pong" ? message.id : undefined;
}

/**
 * ConversationLock brokered by the primary over IPC: it covers every worker of one host. The
 * primary keeps the FIFO table (see lock-broker.ts) and releases a dead worker's locks at
 * once. If the primary goes away, every lease held here reports itself lost.
 */
export class PrimaryConversationLock implements ConversationLock {
  private readonly requests: ChannelRequests<ToWorker, ToPrimary>;
  private readonly leases = new Set<AbortController>();

  constructor(
    channel: Channel<ToWorker, ToPrimary>,
    private readonly policy: LockQueuePolicy,
  ) {
    // A grant that comes after its request was given up (abort, timeout) is released at once.
    this.requests = new ChannelRequests(channel, lockReply, (late) => {
      if (late.ah === "lock.result" && late.outcome === "granted") this.requests.send({ ah: "lock.release", id: late.id });
    });
    channel.onClose(() => {
      // The primary releases a departed worker's locks itself.
      for (const lease of this.leases) lease.abort(new RunAborted("lock_lost"));
    });
  }

  async acquire(key: string, signal?: AbortSignal, waits = true): Promise<LockOutcome> {
    if (this.requests.closed) throw new Error("the primary is gone");
    if (signal?.aborted) return { ok: false, reason: "aborted" };
    let reply: ToWorker;
    try {
      reply = await this.requests.request((id) => ({ ah: "lock.acquire", id, key, ...(waits ? {} : { waits: false }) }), {
        timeoutMs: this.policy.waitMs + BROKER_GRACE_MS,
        signal,
        abandon: (id) => this.requests.send({ ah: "lock.cancel", id }),
      });
    } catch (error) {
      if (signal?.aborted && error === signal.reason) return { ok: false, reason: "aborted" };
      if (error instanceof ReplyTimeout) throw new Error("the primary did not answer the lock request", { cause: error });
      throw error;
    }
    if (reply.ah !== "lock.result") throw new Error(`the primary answered a lock request with ${reply.ah}`);
    if (reply.outcome !== "granted") return { ok: false, reason: reply.outcome };

    const { id, waitedMs } = reply;
    const lost = new AbortController();
    this.leases.add(lost);
    let released = false;
    return {
      ok: true,
      lease: {
        lost: lost.signal,
        waitedMs,
        release: async () => {
          if (released) return;
          released = true;
          this.leases.delete(lost);
          await this.releaseAcknowledged(id);
        },
      },
    };
  }

  /**
   * Release and wait until the primary's table has the lock free, so a caller answered after this
   * never finds its own conversation busy. A primary that does not answer in time (or is gone)
   * frees the lock itself; the wait is bounded either way.
   */
  private async releaseAcknowledged(id: number): Promise<void> {
    await this.requests.request(() => ({ ah: "lock.release", id }), { timeoutMs: PING_TIMEOUT_MS, id }).catch(() => {});
  }

  async ping(): Promise<void> {
    await this.requests.request((id) => ({ ah: "ping", id }), { timeoutMs: PING_TIMEOUT_MS });
  }

  async close(): Promise<void> {}
}
