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

/** Where the table is: here, offered to the only worker, kept by it, or being given back. */
type Delegation =
  | { readonly kind: "none" }
  | { readonly kind: "offered"; readonly ownerId: number; readonly epoch: number }
  | { readonly kind: "delegated"; readonly ownerId: number; readonly epoch: number }
  | { readonly kind: "revoking"; readonly ownerId: number; readonly epoch: number };

/** Offers to a worker that declined (it was waiting on the primary) are at most this often. */
const REOFFER_MS = 1_000;

/**
 * The primary's side of the primary-brokered conversation lock: one FIFO lock table for every
 * worker of this host. Workers ask over IPC; a worker that goes away has its queued requests
 * dropped and its locks released at once.
 *
 * The only worker keeps the table itself: each acquire and release over IPC wakes both processes,
 * which cost a run on SQLite 13 % of its CPU. A worker whose lock is set up says `lock.ready`; when
 * it is the only worker, the broker offers it the table (`lock.delegate`), and it takes it if
 * nothing of it waits on the primary (else it declines, and is offered again after a release, at
 * most every REOFFER_MS). When another worker is forked, the table is asked back (`lock.revoke`):
 * the worker answers with the keys its own table still holds, which the broker holds for it until
 * it releases each; until that answer, every other worker's lock message waits here, in order.
 */
export class LockBroker {
  private readonly table: KeyedFifoLock;
  private readonly owners = new Map<number, Owner>();
  private readonly ready = new Set<number>();
  private delegation: Delegation = { kind: "none" };
  private epoch = 0;
  private lastOffer = -Infinity;
  /** Lock messages of other workers while the table is offered, kept or being given back: handled in order once it is here. */
  private heldBack: Array<readonly [number, LockMessage]> = [];

  constructor(
    policy: LockQueuePolicy,
    /** Told when a worker takes the table (true) and when it is back here (false). */
    private readonly onDelegation: (ownerId: number, kept: boolean) => void = () => {},
    private readonly reofferMs = REOFFER_MS,
  ) {
    this.table = new KeyedFifoLock(policy);
  }

  /** Which worker keeps the table, if one does (diagnostics and tests). */
  get delegate(): number | undefined {
    return this.delegation.kind === "delegated" ? this.delegation.ownerId : undefined;
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
    // A second worker: the table comes back here before any of its requests is looked at.
    if (this.delegation.kind === "delegated") this.revoke(this.delegation.ownerId, this.delegation.epoch);
  }

  /** Forget a worker: cancel its waits and release its locks, handing them to the next waiters. */
  detach(ownerId: number): void {
    const owner = this.owners.get(ownerId);
    if (!owner) return;
    this.owners.delete(ownerId);
    this.ready.delete(ownerId);
    for (const controller of owner.waiting.values()) controller.abort();
    for (const key of owner.held.values()) this.table.release(key);
    // The locks of a worker that kept the table went with its process.
    if (this.delegation.kind !== "none" && this.delegation.ownerId === ownerId) this.takeBack();
    this.heldBack = this.heldBack.filter(([from]) => from !== ownerId);
    this.offer();
  }

  /** Handle one worker message; returns false when it was not a lock message. */
  handle(ownerId: number, message: ToPrimary): boolean {
    if (!isLockMessage(message)) return false;
    const { delegation } = this;
    if (delegation.kind !== "none" && delegation.ownerId !== ownerId && HELD_BACK.has(message.ah)) {
      this.heldBack.push([ownerId, message]);
      return true;
    }
    this.handleNow(ownerId, message);
    return true;
  }

  private handleNow(ownerId: number, message: LockMessage): void {
    const owner = this.owners.get(ownerId);
    switch (message.ah) {
      case "lock.ready":
        if (owner) this.ready.add(ownerId);
        this.offer();
        return;
      case "lock.delegation": {
        const { delegation } = this;
        if (delegation.kind !== "offered" || delegation.ownerId !== ownerId || delegation.epoch !== message.epoch) return;
        if (!message.accepted) return this.takeBack();
        this.delegation = { kind: "delegated", ownerId, epoch: message.epoch };
        this.onDelegation(ownerId, true);
        // A worker forked while the offer was out.
        if (this.owners.size > 1) this.revoke(ownerId, message.epoch);
        return;
      }
      case "lock.returned": {
        const { delegation } = this;
        if (delegation.kind !== "revoking" || delegation.ownerId !== ownerId || delegation.epoch !== message.epoch || !owner) return;
        // Nothing else holds a key while a worker keeps the table, so each is free here: held at once, in this turn.
        for (const { id, key } of message.holds) {
          void this.table.acquire(key);
          owner.held.set(id, key);
        }
        return this.takeBack();
      }
      default:
        return this.handleRequest(ownerId, owner, message);
    }
  }

  /** The table is here again: the messages held back are handled, in the order they came. */
  private takeBack(): void {
    if (this.delegation.kind === "delegated" || this.delegation.kind === "revoking") this.onDelegation(this.delegation.ownerId, false);
    this.delegation = { kind: "none" };
    const held = this.heldBack;
    this.heldBack = [];
    for (const [ownerId, message] of held) this.handle(ownerId, message);
  }

  /** Offer the table to the only worker, when it is ready and nothing of it is here. */
  private offer(): void {
    if (this.delegation.kind !== "none" || this.owners.size !== 1) return;
    const [ownerId, owner] = this.owners.entries().next().value!;
    if (!this.ready.has(ownerId) || owner.held.size > 0 || owner.waiting.size > 0) return;
    const now = performance.now();
    if (now - this.lastOffer < this.reofferMs) return;
    this.lastOffer = now;
    const epoch = ++this.epoch;
    this.delegation = { kind: "offered", ownerId, epoch };
    this.tryReply(owner, { ah: "lock.delegate", epoch });
  }

  private revoke(ownerId: number, epoch: number): void {
    this.delegation = { kind: "revoking", ownerId, epoch };
    this.tryReply(this.owners.get(ownerId), { ah: "lock.revoke", epoch });
  }

  private handleRequest(ownerId: number, owner: Owner | undefined, message: LockRequest): void {
    switch (message.ah) {
      case "lock.acquire":
        if (owner) void this.acquire(ownerId, owner, message.id, message.key, message.waits !== false);
        return;
      case "lock.cancel":
        owner?.waiting.get(message.id)?.abort();
        return;
      case "lock.release": {
        const key = owner?.held.get(message.id);
        if (owner && key !== undefined) {
          owner.held.delete(message.id);
          this.table.release(key);
        }
        // Acknowledged even when nothing was held, so the worker never waits for a lost answer.
        this.tryReply(owner, { ah: "lock.released", id: message.id });
        this.offer();
        return;
      }
      case "ping":
        owner?.reply({ ah: "pong", id: message.id });
        return;
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

/** A worker's request of the table. */
type LockRequest = Extract<ToPrimary, { ah: "lock.acquire" | "lock.cancel" | "lock.release" | "ping" }>;
/** Every message of a worker's lock. */
type LockMessage = LockRequest | Extract<ToPrimary, { ah: "lock.ready" | "lock.delegation" | "lock.returned" }>;

const LOCK_MESSAGES: ReadonlySet<ToPrimary["ah"]> = new Set<LockMessage["ah"]>(["lock.acquire", "lock.cancel", "lock.release", "ping", "lock.ready", "lock.delegation", "lock.returned"]);

/** What another worker's lock asks that must wait while a worker keeps the table. */
const HELD_BACK: ReadonlySet<ToPrimary["ah"]> = new Set<LockMessage["ah"]>(["lock.acquire", "lock.cancel", "lock.release"]);

function isLockMessage(message: ToPrimary): message is LockMessage {
  return LOCK_MESSAGES.has(message.ah);
}
