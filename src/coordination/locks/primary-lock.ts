import type { Channel, ToPrimary, ToWorker } from "../protocol.ts";
import { ChannelRequests, ReplyTimeout } from "../channel-requests.ts";
import { RunAborted } from "../../errors/classify.ts";
import type { ConversationLock, LockOutcome, LockQueuePolicy } from "./conversation-lock.ts";
import { KeyedFifoLock } from "./keyed-fifo-lock.ts";

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
 *
 * While this worker is the only one, the primary hands it the table (lock-broker.ts): it locks in
 * its own, with no IPC. When the table is asked back, the keys its table still holds stay in it
 * (`returned`), held at the primary for this worker: this worker's requests for those keys queue
 * here behind them, and the last release of each frees it at the primary.
 */
export class PrimaryConversationLock implements ConversationLock {
  private readonly requests: ChannelRequests<ToWorker, ToPrimary>;
  private readonly leases = new Set<AbortController>();
  /** The table, while the primary has handed it to this worker. */
  private own: KeyedFifoLock | undefined;
  /** The table handed back, while it still holds keys: key → the id they are held under at the primary. */
  private returned: { readonly table: KeyedFifoLock; readonly ids: Map<string, number> } | undefined;
  /** Ids of holds kept at the primary for the returned table's keys (negative: apart from request ids). */
  private nextHoldId = -1;

  constructor(
    channel: Channel<ToWorker, ToPrimary>,
    private readonly policy: LockQueuePolicy,
  ) {
    // A grant that comes after its request was given up (abort, timeout) is released at once.
    this.requests = new ChannelRequests(channel, lockReply, (late) => {
      if (late.ah === "lock.result" && late.outcome === "granted") this.requests.send({ ah: "lock.release", id: late.id });
    });
    channel.onMessage((message) => {
      if (message.ah === "lock.delegate") this.delegated(message.epoch);
      else if (message.ah === "lock.revoke") this.revoked(message.epoch);
    });
    channel.onClose(() => {
      // The primary releases a departed worker's locks itself.
      for (const lease of this.leases) lease.abort(new RunAborted("lock_lost"));
    });
    this.requests.send({ ah: "lock.ready" });
  }

  /** Whether this worker keeps the lock table now (tests and diagnostics). */
  get keepsTable(): boolean {
    return this.own !== undefined;
  }

  async acquire(key: string, signal?: AbortSignal, waits = true): Promise<LockOutcome> {
    if (this.requests.closed) throw new Error("the primary is gone");
    if (signal?.aborted) return { ok: false, reason: "aborted" };
    if (this.own) return this.acquireHere(this.own, key, signal, waits);
    if (this.returned?.ids.has(key)) return this.acquireHere(this.returned.table, key, signal, waits);
    return this.acquireAtPrimary(key, signal, waits);
  }

  /** Take `key` in the table this worker keeps (or still holds keys of). */
  private async acquireHere(table: KeyedFifoLock, key: string, signal: AbortSignal | undefined, waits: boolean): Promise<LockOutcome> {
    const { outcome, waitedMs } = await table.acquire(key, signal, waits);
    if (outcome !== "granted") return { ok: false, reason: outcome };
    return this.granted(waitedMs, async () => {
      table.release(key);
      const returned = this.returned;
      if (table !== returned?.table || table.isHeld(key)) return;
      // The last holder of a returned key: its hold at the primary goes too.
      const id = returned.ids.get(key)!;
      returned.ids.delete(key);
      if (returned.ids.size === 0) this.returned = undefined;
      await this.releaseAcknowledged(id);
    });
  }

  /** A lease that reports itself lost when the primary goes away, and frees its lock (once) with `free`. */
  private granted(waitedMs: number, free: () => Promise<void>): LockOutcome {
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
          await free();
        },
      },
    };
  }

  private async acquireAtPrimary(key: string, signal: AbortSignal | undefined, waits: boolean): Promise<LockOutcome> {
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
    return this.granted(waitedMs, () => this.releaseAcknowledged(id));
  }

  /**
   * The primary offers the table. Taken only when nothing of this worker is at the primary (no
   * lock held or asked for there, no release unanswered): then no request of it is on its way.
   */
  private delegated(epoch: number): void {
    const accepted = this.requests.pendingCount === 0 && this.leases.size === 0 && !this.returned;
    if (accepted) this.own = new KeyedFifoLock(this.policy);
    this.requests.send({ ah: "lock.delegation", epoch, accepted });
  }

  /** The primary asks the table back: the keys held here stay, held at the primary for this worker. */
  private revoked(epoch: number): void {
    const table = this.own;
    this.own = undefined;
    const holds = (table?.heldKeys() ?? []).map((key) => ({ id: this.nextHoldId--, key }));
    if (table && holds.length) this.returned = { table, ids: new Map(holds.map(({ id, key }) => [key, id])) };
    this.requests.send({ ah: "lock.returned", epoch, holds });
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
