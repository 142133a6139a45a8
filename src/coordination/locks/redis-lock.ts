import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { openLink, type RedisLink, type RedisSource, type Subscription } from "../redis-link.ts";
import type { ConversationLock, LockOutcome, LockQueuePolicy } from "./conversation-lock.ts";
import { RedisLease, type LeaseEvent, type LeaseTerms } from "./redis-lease.ts";
import { lockKey, lockScripts, queueKey, releaseChannel, type LockScripts } from "./redis-lock-scripts.ts";

export type { LeaseEvent } from "./redis-lease.ts";

export type RedisLockOptions = RedisSource & {
  /** Prefix of every key and channel this lock uses (REDIS_KEY_PREFIX). */
  readonly keyPrefix: string;
  /** Lease time of one lock (REDIS_LOCK_LEASE): how long a crashed holder keeps a conversation. */
  readonly leaseMs: number;
  readonly policy: LockQueuePolicy;
  /**
   * Each lease taken (`held`) and given up (`dropped`, after its release reached Redis or when it
   * was lost), so a supervisor can release the leases of a process that died (see LeaseReaper).
   */
  readonly onLease?: (event: LeaseEvent) => void;
};

/** How often a waiter looks again without a release message (covers leases that expired). */
const POLL_MS = 200;
/** How long an acquire waits for the connection to come up before calling Redis unavailable. */
const CONNECT_WAIT_MS = 1_000;

/**
 * ConversationLock across every worker of every host: a lease per conversation
 * (`<prefix>lock:<key>`, see RedisLease), extended while the run lives and aborting the run
 * through `lost` when it cannot be kept. Waiting is a bounded FIFO queue in Redis
 * (`<prefix>queue:<key>`): only the oldest live waiter may take a freed lock, so waiters are served
 * in arrival order across hosts. A release is published on `<prefix>lock-released`; waiters also
 * look again every POLL_MS, which covers leases that expired because their host died.
 */
export class RedisConversationLock implements ConversationLock {
  private readonly link: RedisLink;
  /** Whether the link is this lock's own (given a URL), closed with it. */
  private readonly ownsLink: boolean;
  private readonly client: Redis;
  private readonly released: Subscription;
  private readonly scripts: LockScripts;
  private readonly terms: LeaseTerms;
  private readonly channel: string;
  private readonly sleepers = new Map<string, Set<() => void>>();
  private readonly leases = new Set<RedisLease>();

  constructor(private readonly options: RedisLockOptions) {
    ({ link: this.link, owned: this.ownsLink } = openLink(options));
    // Fail fast while disconnected: a lock request answers 503 rather than hanging.
    this.client = this.link.commands;

    this.channel = releaseChannel(options.keyPrefix);
    this.released = this.link.subscribe(this.channel, (key) => {
      for (const wake of this.sleepers.get(key) ?? []) wake();
    });

    this.scripts = lockScripts(this.client);
    this.terms = {
      scripts: this.scripts,
      leaseMs: options.leaseMs,
      lockKey: (key) => lockKey(options.keyPrefix, key),
      onLease: options.onLease,
      onReleased: (lease) => {
        this.leases.delete(lease);
        this.client.publish(this.channel, lease.key).catch(() => {});
      },
    };
  }

  /** Wait briefly for the connection (startup, a reconnect in progress); throw if it stays down. */
  private async connected(): Promise<void> {
    if (this.client.status === "ready") return;
    await new Promise<void>((resolve, reject) => {
      const onReady = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.client.off("ready", onReady);
        reject(new Error("Redis is unavailable"));
      }, CONNECT_WAIT_MS);
      this.client.once("ready", onReady);
    });
  }

  /** The lease if the conversation was free; undefined if someone holds it; throws if Redis did not answer. */
  private async take(key: string, waitedMs: number): Promise<RedisLease | undefined> {
    const lease = await RedisLease.take(this.terms, key, waitedMs);
    if (lease) this.leases.add(lease);
    return lease;
  }

  async acquire(key: string, signal?: AbortSignal, waits = true): Promise<LockOutcome> {
    const { maxWaiters } = this.options.policy;
    const waitMs = waits ? this.options.policy.waitMs : 0;
    const queue = queueKey(this.options.keyPrefix, key);
    await this.connected();
    const started = performance.now();
    // Fast path: nobody is queued (or queueing is off), so take the lock if it is free.
    if (waitMs <= 0 || (await this.scripts.head(queue, "")).head === "") {
      const lease = await this.take(key, 0);
      if (lease) return { ok: true, lease };
      if (waitMs <= 0) return { ok: false, reason: "busy" };
    }
    if (maxWaiters <= 0) return { ok: false, reason: "queue_full" };
    if (signal?.aborted) return { ok: false, reason: "aborted" };

    const id = randomUUID();
    if (!(await this.scripts.enqueue(queue, id, Math.ceil(waitMs), maxWaiters))) return { ok: false, reason: "queue_full" };
    const deadline = started + waitMs;
    try {
      for (;;) {
        if (signal?.aborted) return { ok: false, reason: "aborted" };
        const { head, queued } = await this.scripts.head(queue, id);
        if (!queued) return { ok: false, reason: "wait_expired" };
        if (head === id) {
          // A grant after queueing always reports a positive wait: the metrics count those as queue waits.
          const lease = await this.take(key, Math.max(performance.now() - started, 0.001));
          if (lease) return { ok: true, lease };
        }
        const remaining = deadline - performance.now();
        if (remaining <= 0) return { ok: false, reason: "wait_expired" };
        await this.nap(key, Math.min(POLL_MS, remaining), signal);
      }
    } finally {
      this.scripts.leave(queue, id).catch(() => {});
    }
  }

  /** Sleep until a release of `key` is published, `ms` pass, or the signal aborts. */
  private nap(key: string, ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      let set = this.sleepers.get(key);
      if (!set) this.sleepers.set(key, (set = new Set()));
      const wake = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", wake);
        set.delete(wake);
        if (set.size === 0) this.sleepers.delete(key);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      signal?.addEventListener("abort", wake, { once: true });
      set.add(wake);
    });
  }

  async ping(): Promise<void> {
    await this.client.ping();
  }

  async close(): Promise<void> {
    for (const set of this.sleepers.values()) for (const wake of set) wake();
    for (const lease of this.leases) lease.lose();
    this.released.unsubscribe();
    if (this.ownsLink) this.link.close();
  }
}
