import { randomBytes } from "node:crypto";
import { RunAborted } from "../../errors/classify.ts";
import type { LockLease } from "./conversation-lock.ts";
import type { LockScripts } from "./redis-lock-scripts.ts";

/** A lease of this process on a conversation: its key and the token stored in Redis. */
export interface LeaseEvent {
  readonly kind: "held" | "dropped";
  readonly key: string;
  readonly token: string;
}

/** What every lease of one lock shares. */
export interface LeaseTerms {
  readonly scripts: LockScripts;
  /** How long one taking or extension lasts in Redis (REDIS_LOCK_LEASE). */
  readonly leaseMs: number;
  /** The Redis key of a conversation's lease. */
  readonly lockKey: (key: string) => string;
  /** Each lease taken and given up (see RedisLockOptions.onLease). */
  readonly onLease?: (event: LeaseEvent) => void;
  /** Called once a release has reached Redis (or failed to): time to wake the conversation's waiters. */
  readonly onReleased: (lease: RedisLease) => void;
}

/** Retry pace of a failed lease extension while the lease is still valid. */
const EXTEND_RETRY_MS = 250;
/** Part of a lease not counted on: Redis expires to the millisecond, and clocks drift a little. */
const DRIFT_FACTOR = 0.01;

/** The local time before which a lease set or extended at `start` surely still holds in Redis. */
const holdsUntil = (start: number, leaseMs: number) => start + leaseMs - (Math.round(DRIFT_FACTOR * leaseMs) + 2);

/** A fresh lease token: what makes a lease this holder's and no one else's. */
const newToken = () => randomBytes(16).toString("hex");

/**
 * A held conversation lease. It is extended at half its lease time while held; `lost` aborts when
 * it cannot be kept (taken over, or not extended in time), a little before it would run out, so two
 * holders never overlap for long.
 */
export class RedisLease implements LockLease {
  private readonly lostController = new AbortController();
  private released = false;
  private reportedHeld = true;
  private extending: Promise<void> | undefined;
  private extendTimer: NodeJS.Timeout | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;
  /** Stop the run this long before the lease runs out. */
  private readonly margin: number;

  /** Take `key`'s lease if it is free; undefined when someone holds it. Rejects when Redis does not answer. */
  static async take(terms: LeaseTerms, key: string, waitedMs: number): Promise<RedisLease | undefined> {
    const token = newToken();
    const start = Date.now();
    const lock = terms.lockKey(key);
    try {
      if (!(await terms.scripts.take(lock, token, terms.leaseMs))) return undefined;
    } catch (error) {
      // The SET may have reached Redis with its answer lost: give back what it may have taken.
      await terms.scripts.drop(lock, token).catch(() => {});
      throw error;
    }
    return new RedisLease(terms, key, token, holdsUntil(start, terms.leaseMs), waitedMs);
  }

  private constructor(
    private readonly terms: LeaseTerms,
    readonly key: string,
    private readonly token: string,
    private validUntil: number,
    readonly waitedMs: number,
  ) {
    this.margin = Math.min(500, terms.leaseMs / 10);
    this.armExpiry();
    this.scheduleExtend(terms.leaseMs / 2);
    this.report("held");
    this.lostController.signal.addEventListener("abort", () => this.reportDropped(), { once: true });
  }

  get lost(): AbortSignal {
    return this.lostController.signal;
  }

  /** Give the lease up as lost (unless released already): the run is told through `lost`. */
  lose(): void {
    if (this.released) return;
    clearTimeout(this.extendTimer);
    clearTimeout(this.expiryTimer);
    if (!this.lostController.signal.aborted) this.lostController.abort(new RunAborted("lock_lost"));
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    clearTimeout(this.extendTimer);
    clearTimeout(this.expiryTimer);
    await this.extending?.catch(() => {});
    // If Redis is unreachable the lease simply expires.
    await this.terms.scripts.drop(this.terms.lockKey(this.key), this.token).catch(() => {});
    this.reportDropped();
    this.terms.onReleased(this);
  }

  private armExpiry(): void {
    clearTimeout(this.expiryTimer);
    this.expiryTimer = setTimeout(() => this.lose(), Math.max(0, this.validUntil - this.margin - Date.now()));
  }

  private scheduleExtend(delay: number): void {
    this.extendTimer = setTimeout(() => {
      this.extending = this.extend().finally(() => (this.extending = undefined));
    }, delay);
  }

  private async extend(): Promise<void> {
    if (this.released || this.lost.aborted) return;
    if (Date.now() > this.validUntil) return this.lose();
    const start = Date.now();
    let kept: boolean;
    try {
      kept = await this.terms.scripts.extend(this.terms.lockKey(this.key), this.token, this.terms.leaseMs);
    } catch {
      // Redis did not answer: try again while the lease still holds.
      if (this.released) return;
      if (Date.now() >= this.validUntil - this.margin) this.lose();
      else this.scheduleExtend(EXTEND_RETRY_MS);
      return;
    }
    if (this.released) return;
    if (!kept) return this.lose();
    this.validUntil = holdsUntil(start, this.terms.leaseMs);
    this.armExpiry();
    this.scheduleExtend(this.terms.leaseMs / 2);
  }

  private report(kind: LeaseEvent["kind"]): void {
    this.terms.onLease?.({ kind, key: this.key, token: this.token });
  }

  private reportDropped(): void {
    if (!this.reportedHeld) return;
    this.reportedHeld = false;
    this.report("dropped");
  }
}
