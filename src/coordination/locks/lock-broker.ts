import type { LockQueuePolicy } from "./conversation-lock.ts";
import { KeyedFifoLock } from "./keyed-fifo-lock.ts";
import { sendToWorker, type ReplyToWorker, type ToPrimary, type ToWorker } from "../protocol.ts";

interface Owner {
  readonly reply: ReplyToWorker;
  /** Requests waiting in the queue, by request id. */
  readonly waiting: Map<number, AbortController>;
  /** Locks held, request id → key. */
  readonly held: Map<number, string>;
}

/**
 * The primary's side of the primary-brokered conversation lock: one FIFO lock table for every
 * worker of this host. Workers ask over IPC; a worker that goes away has its queued requests
 * dropped and its locks released at once.
 */
export class LockBroker {
  private readonly table: KeyedFifoLock;
  private readonly owners = new Map<number, Owner>();

  constructor(policy: LockQueuePolicy) {
    this.table = new KeyedFifoLock(policy);
  }

  /** Locks currently held (for tests and logs). */
  get heldCount(): number {
    return this.table.heldCount;
  }

  /** Whether `key` is held and how many wait for it, across every worker (diagnostics and tests). */
  state(key: string): { held: boolean; waiting: number } {
    return { held: this.table.isHeld(key), waiting: this.table.waitingFor(key) };
  }

  attach(ownerId: number, reply: ReplyToWorker): void {
    this.owners.set(ownerId, { reply, waiting: new Map(), held: new Map() });
  }

  /** Forget a worker: cancel its waits and release its locks, handing them to the next waiters. */
  detach(ownerId: number): void {
    const owner = this.owners.get(ownerId);
    if (!owner) return;
    this.owners.delete(ownerId);
    for (const controller of owner.waiting.values()) controller.abort();
    for (const key of owner.held.values()) this.table.release(key);
  }

  /** Handle one worker message; returns false when it was not a lock message. */
  handle(ownerId: number, message: ToPrimary): boolean {
    const owner = this.owners.get(ownerId);
    switch (message.ah) {
      case "lock.acquire":
        if (owner) void this.acquire(ownerId, owner, message.id, message.key, message.waits !== false);
        return true;
      case "lock.cancel":
        owner?.waiting.get(message.id)?.abort();
        return true;
      case "lock.release": {
        const key = owner?.held.get(message.id);
        if (owner && key !== undefined) {
          owner.held.delete(message.id);
          this.table.release(key);
        }
        // Acknowledged even when nothing was held, so the worker never waits for a lost answer.
        this.tryReply(owner, { ah: "lock.released", id: message.id });
        return true;
      }
      case "ping":
        owner?.reply({ ah: "pong", id: message.id });
        return true;
      default:
        return false;
    }
  }

  private async acquire(ownerId: number, owner: Owner, id: number, key: string, waits: boolean): Promise<void> {
    const controller = new AbortController();
    owner.waiting.set(id, controller);
    const { outcome, waitedMs } = await this.table.acquire(key, controller.signal, waits);
    owner.waiting.delete(id);
    if (outcome === "granted") {
      if (this.owners.get(ownerId) !== owner) {
        // The worker went away while its request was being granted.
        this.table.release(key);
        return;
      }
      owner.held.set(id, key);
    }
    this.tryReply(owner, { ah: "lock.result", id, outcome, waitedMs });
  }

  /** A channel that closed between the check and the reply is the worker going away: `detach` releases what it held. */
  private tryReply(owner: Owner | undefined, message: ToWorker): void {
    if (owner) sendToWorker(owner.reply, message);
  }
}
