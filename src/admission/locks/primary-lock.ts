import type { Channel, ToPrimary, ToWorker } from "../../cluster/protocol.ts";
import { RunAborted } from "../../errors/classify.ts";
import type { WaitOutcome } from "../wait-queue.ts";
import type { ConversationLock, LockOutcome, LockQueuePolicy } from "./conversation-lock.ts";

/** How long past the queue wait a worker waits for the primary before calling the lock unavailable. */
const BROKER_GRACE_MS = 5_000;
const PING_TIMEOUT_MS = 2_000;

interface Pending {
  resolve(result: { outcome: WaitOutcome; waitedMs: number }): void;
  reject(error: Error): void;
}

/**
 * ConversationLock brokered by the primary over IPC: it covers every worker of one host. The
 * primary keeps the FIFO table (see cluster/lock-broker.ts) and releases a dead worker's locks at
 * once. If the primary goes away, every lease held here reports itself lost.
 */
export class PrimaryConversationLock implements ConversationLock {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  /** Requests given up on (abort, timeout): a late grant for one of them is released at once. */
  private readonly abandoned = new Set<number>();
  private readonly pings = new Map<number, () => void>();
  /** Releases waiting for the primary's acknowledgement, by request id. */
  private readonly releases = new Map<number, () => void>();
  private readonly leases = new Set<AbortController>();
  private closed = false;

  constructor(
    private readonly channel: Channel<ToWorker, ToPrimary>,
    private readonly policy: LockQueuePolicy,
  ) {
    channel.onMessage((message) => this.onMessage(message));
    channel.onClose(() => {
      this.closed = true;
      for (const { reject } of this.pending.values()) reject(new Error("the primary is gone"));
      this.pending.clear();
      for (const lease of this.leases) lease.abort(new RunAborted("lock_lost"));
      // The primary releases a departed worker's locks itself.
      for (const done of this.releases.values()) done();
      this.releases.clear();
    });
  }

  private onMessage(message: ToWorker): void {
    if (message.ah === "pong") {
      this.pings.get(message.id)?.();
      return;
    }
    if (message.ah === "lock.released") {
      this.releases.get(message.id)?.();
      return;
    }
    if (message.ah !== "lock.result") return;
    const pending = this.pending.get(message.id);
    if (pending) {
      this.pending.delete(message.id);
      pending.resolve(message);
    } else if (this.abandoned.delete(message.id) && message.outcome === "granted") {
      this.send({ ah: "lock.release", id: message.id });
    }
  }

  private send(message: ToPrimary): void {
    try {
      this.channel.send(message);
    } catch {
      // The primary is gone; the close handler fails what was pending.
    }
  }

  async acquire(key: string, signal?: AbortSignal): Promise<LockOutcome> {
    if (this.closed) throw new Error("the primary is gone");
    if (signal?.aborted) return { ok: false, reason: "aborted" };
    const id = this.nextId++;
    const result = await new Promise<{ outcome: WaitOutcome; waitedMs: number } | "aborted">((resolve, reject) => {
      const giveUp = () => {
        this.pending.delete(id);
        this.abandoned.add(id);
        this.send({ ah: "lock.cancel", id });
      };
      const onAbort = () => {
        giveUp();
        settle();
        resolve("aborted");
      };
      const timer = setTimeout(() => {
        giveUp();
        settle();
        reject(new Error("the primary did not answer the lock request"));
      }, this.policy.waitMs + BROKER_GRACE_MS);
      const settle = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.pending.set(id, {
        resolve: (value) => {
          settle();
          resolve(value);
        },
        reject: (error) => {
          settle();
          reject(error);
        },
      });
      try {
        this.channel.send({ ah: "lock.acquire", id, key });
      } catch (error) {
        this.pending.delete(id);
        settle();
        reject(error as Error);
      }
    });
    if (result === "aborted") return { ok: false, reason: "aborted" };
    if (result.outcome !== "granted") return { ok: false, reason: result.outcome };

    const lost = new AbortController();
    this.leases.add(lost);
    let released = false;
    return {
      ok: true,
      lease: {
        lost: lost.signal,
        waitedMs: result.waitedMs,
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
  private releaseAcknowledged(id: number): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.releases.delete(id);
        resolve();
      };
      const timer = setTimeout(done, PING_TIMEOUT_MS);
      this.releases.set(id, done);
      this.send({ ah: "lock.release", id });
    });
  }

  async ping(): Promise<void> {
    if (this.closed) throw new Error("the primary is gone");
    const id = this.nextId++;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pings.delete(id);
        reject(new Error("the primary did not answer"));
      }, PING_TIMEOUT_MS);
      this.pings.set(id, () => {
        clearTimeout(timer);
        this.pings.delete(id);
        resolve();
      });
      this.channel.send({ ah: "ping", id });
    });
  }

  async close(): Promise<void> {}
}
