import { randomUUID } from "node:crypto";
import { Redis, type RedisOptions } from "ioredis";
import Redlock, { ExecutionError, ResourceLockedError, type Lock } from "redlock";
import { RunAborted } from "../../errors/classify.ts";
import type { ConversationLock, LockLease, LockOutcome, LockQueuePolicy } from "./conversation-lock.ts";

export interface RedisLockOptions {
  readonly url: string;
  /** Prefix of every key and channel this lock uses (REDIS_KEY_PREFIX). */
  readonly keyPrefix: string;
  /** Lease time of one lock (REDIS_LOCK_LEASE): how long a crashed holder keeps a conversation. */
  readonly leaseMs: number;
  readonly policy: LockQueuePolicy;
  /** Connection problems, at most one call per ERROR_REPORT_INTERVAL_MS. */
  readonly onError?: (error: Error) => void;
  /**
   * Each lease taken (`held`) and given up (`dropped`, after its release reached Redis or when it
   * was lost), so a supervisor can release the leases of a process that died (see LeaseReaper).
   */
  readonly onLease?: (event: LeaseEvent) => void;
}

/** A lease of this process on a conversation: its key and the token stored in Redis. */
export interface LeaseEvent {
  readonly kind: "held" | "dropped";
  readonly key: string;
  readonly token: string;
}

/** How often a waiter looks again without a release message (covers leases that expired). */
const POLL_MS = 200;
/** How long an acquire waits for the connection to come up before calling Redis unavailable. */
const CONNECT_WAIT_MS = 1_000;
/** Retry pace of a failed lease extension while the lease is still valid. */
const EXTEND_RETRY_MS = 250;
const ERROR_REPORT_INTERVAL_MS = 10_000;

/** Delete KEYS[1] only if it still holds the token ARGV[1]: a lease nobody else has taken since. */
const DELETE_IF_HELD = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

/** Current Redis time in ms; the queue uses the server's clock so hosts' clocks need not agree. */
const NOW = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/**
 * Join the waiters of one conversation (KEYS[1], a sorted set scored by each waiter's deadline),
 * unless THREAD_QUEUE_MAX_WAITERS are already waiting. Expired entries (waiters that crashed or
 * gave up without leaving) are dropped first. ARGV: waiter id, wait ms, max waiters.
 */
const ENQUEUE = `${NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
local ttl = tonumber(ARGV[2]) + 1000
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1`;

/** The first live waiter's id ('' when none) and whether ARGV[1] is still queued. */
const HEAD = `${NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local head = redis.call('ZRANGE', KEYS[1], 0, 0)[1] or ''
local queued = 0
if ARGV[1] ~= '' and redis.call('ZSCORE', KEYS[1], ARGV[1]) then queued = 1 end
return {head, queued}`;

type ScriptFn = (key: string, ...args: Array<string | number>) => Promise<unknown>;

const lockKey = (prefix: string, key: string) => `${prefix}lock:${key}`;
const releaseChannel = (prefix: string) => `${prefix}lock-released`;

/** True when a redlock failure means "someone else holds it", not "Redis did not answer". */
async function heldByAnother(error: unknown): Promise<boolean> {
  if (!(error instanceof ExecutionError)) return false;
  const last = error.attempts[error.attempts.length - 1];
  if (!last) return false;
  const stats = await last;
  const against = [...stats.votesAgainst.values()];
  return against.length > 0 && against.every((e) => e instanceof ResourceLockedError);
}

/**
 * ConversationLock across every worker of every host: a Redlock lease per conversation
 * (`<prefix>lock:<key>`), extended while the run lives and aborting the run through `lost` when it
 * cannot be kept. Waiting is a bounded FIFO queue in Redis (`<prefix>queue:<key>`): only the
 * oldest live waiter may take a freed lock, so waiters are served in arrival order across hosts.
 * A release is published on `<prefix>lock-released`; waiters also look again every POLL_MS, which
 * covers leases that expired because their host died.
 */
export class RedisConversationLock implements ConversationLock {
  private readonly client: Redis;
  private readonly subscriber: Redis;
  private readonly redlock: Redlock;
  private readonly enqueue: ScriptFn;
  private readonly head: ScriptFn;
  private readonly channel: string;
  private readonly sleepers = new Map<string, Set<() => void>>();
  private readonly leases = new Set<() => void>();
  private lastErrorReport = 0;

  constructor(private readonly options: RedisLockOptions) {
    const common: RedisOptions = {
      connectTimeout: 2_000,
      retryStrategy: (times) => Math.min(100 * times, 1_000),
      // Reconnect forever; readiness reports the outage meanwhile.
      maxRetriesPerRequest: 1,
    };
    // Fail fast while disconnected: a lock request answers 503 rather than hanging.
    this.client = new Redis(options.url, { ...common, enableOfflineQueue: false, commandTimeout: 2_000 });
    this.subscriber = new Redis(options.url, common);
    const report = (error: Error) => {
      const now = Date.now();
      if (now - this.lastErrorReport < ERROR_REPORT_INTERVAL_MS) return;
      this.lastErrorReport = now;
      options.onError?.(error);
    };
    this.client.on("error", report);
    this.subscriber.on("error", report);

    this.channel = releaseChannel(options.keyPrefix);
    this.subscriber.subscribe(this.channel).catch(() => {});
    this.subscriber.on("message", (_channel: string, key: string) => {
      for (const wake of this.sleepers.get(key) ?? []) wake();
    });

    this.client.defineCommand("agenthostEnqueue", { numberOfKeys: 1, lua: ENQUEUE });
    this.client.defineCommand("agenthostHead", { numberOfKeys: 1, lua: HEAD });
    const commands = this.client as unknown as Record<string, ScriptFn>;
    this.enqueue = commands.agenthostEnqueue!.bind(this.client);
    this.head = commands.agenthostHead!.bind(this.client);
    // Acquire attempts are paced by the queue below, so redlock itself never retries.
    this.redlock = new Redlock([this.client], { retryCount: 0, driftFactor: 0.01 });
  }

  private lockKey(key: string): string {
    return lockKey(this.options.keyPrefix, key);
  }

  private queueKey(key: string): string {
    return `${this.options.keyPrefix}queue:${key}`;
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

  /** The lock if it was free; undefined if someone holds it; throws if Redis did not answer. */
  private async tryLock(key: string): Promise<Lock | undefined> {
    try {
      return await this.redlock.acquire([this.lockKey(key)], this.options.leaseMs);
    } catch (error) {
      if (await heldByAnother(error)) return undefined;
      throw error;
    }
  }

  async acquire(key: string, signal?: AbortSignal): Promise<LockOutcome> {
    const { waitMs, maxWaiters } = this.options.policy;
    await this.connected();
    const started = performance.now();
    // Fast path: nobody is queued (or queueing is off), so take the lock if it is free.
    if (waitMs <= 0 || ((await this.head(this.queueKey(key), "")) as [string, number])[0] === "") {
      const lock = await this.tryLock(key);
      if (lock) return { ok: true, lease: this.lease(key, lock, 0) };
      if (waitMs <= 0) return { ok: false, reason: "busy" };
    }
    if (maxWaiters <= 0) return { ok: false, reason: "queue_full" };
    if (signal?.aborted) return { ok: false, reason: "aborted" };

    const id = randomUUID();
    if ((await this.enqueue(this.queueKey(key), id, Math.ceil(waitMs), maxWaiters)) !== 1) {
      return { ok: false, reason: "queue_full" };
    }
    const deadline = started + waitMs;
    try {
      for (;;) {
        if (signal?.aborted) return { ok: false, reason: "aborted" };
        const [head, queued] = (await this.head(this.queueKey(key), id)) as [string, number];
        if (!queued) return { ok: false, reason: "wait_expired" };
        if (head === id) {
          const lock = await this.tryLock(key);
          if (lock) return { ok: true, lease: this.lease(key, lock, Math.max(performance.now() - started, 0.001)) };
        }
        const remaining = deadline - performance.now();
        if (remaining <= 0) return { ok: false, reason: "wait_expired" };
        await this.nap(key, Math.min(POLL_MS, remaining), signal);
      }
    } finally {
      this.client.zrem(this.queueKey(key), id).catch(() => {});
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

  /** A held lock: extended at half its lease while held; `lost` aborts when it cannot be kept. */
  private lease(key: string, lock: Lock, waitedMs: number): LockLease {
    const { leaseMs } = this.options;
    const lost = new AbortController();
    // Stop the run a little before the lease runs out, so two holders never overlap for long.
    const margin = Math.min(500, leaseMs / 10);
    let current = lock;
    let released = false;
    let extending: Promise<void> | undefined;
    let extendTimer: NodeJS.Timeout | undefined;
    let expiryTimer: NodeJS.Timeout | undefined;

    const loseIt = () => {
      clearTimeout(extendTimer);
      clearTimeout(expiryTimer);
      if (!lost.signal.aborted) lost.abort(new RunAborted("lock_lost"));
    };
    const armExpiry = () => {
      clearTimeout(expiryTimer);
      expiryTimer = setTimeout(loseIt, Math.max(0, current.expiration - margin - Date.now()));
    };
    const scheduleExtend = (delay: number) => {
      extendTimer = setTimeout(() => {
        extending = extend().finally(() => (extending = undefined));
      }, delay);
    };
    const extend = async () => {
      if (released || lost.signal.aborted) return;
      try {
        current = await current.extend(leaseMs);
        if (released) return;
        armExpiry();
        scheduleExtend(leaseMs / 2);
      } catch (error) {
        if (released) return;
        if ((await heldByAnother(error)) || Date.now() >= current.expiration - margin) loseIt();
        else scheduleExtend(EXTEND_RETRY_MS);
      }
    };
    let reportedHeld = true;
    const report = (kind: LeaseEvent["kind"]) => this.options.onLease?.({ kind, key, token: lock.value });
    const dropReport = () => {
      if (!reportedHeld) return;
      reportedHeld = false;
      report("dropped");
    };
    armExpiry();
    scheduleExtend(leaseMs / 2);
    this.leases.add(loseIt);
    report("held");
    lost.signal.addEventListener("abort", dropReport, { once: true });

    return {
      lost: lost.signal,
      waitedMs,
      release: async () => {
        if (released) return;
        released = true;
        this.leases.delete(loseIt);
        clearTimeout(extendTimer);
        clearTimeout(expiryTimer);
        await extending?.catch(() => {});
        // If Redis is unreachable the lease simply expires.
        await current.release().catch(() => {});
        dropReport();
        this.client.publish(this.channel, key).catch(() => {});
      },
    };
  }

  async ping(): Promise<void> {
    await this.client.ping();
  }

  async close(): Promise<void> {
    for (const set of this.sleepers.values()) for (const wake of set) wake();
    for (const loseIt of this.leases) loseIt();
    this.client.disconnect();
    this.subscriber.disconnect();
  }
}

export interface LeaseReaperOptions {
  readonly url: string;
  /** REDIS_KEY_PREFIX, as the workers' RedisConversationLock uses it. */
  readonly keyPrefix: string;
  /** Connection problems, at most one call per ERROR_REPORT_INTERVAL_MS. */
  readonly onError?: (error: Error) => void;
}

/**
 * The supervisor's side of RedisConversationLock's `onLease`: it keeps the leases each worker
 * reports and, when a worker dies, deletes those still holding that worker's token and announces
 * them on the release channel, so its conversations are free at once instead of after the lease
 * time. A lease that expired and was taken by anyone else since holds another token and is left
 * alone: only the dead worker's own leases are ever deleted.
 */
export class LeaseReaper {
  private readonly client: Redis;
  private readonly held = new Map<number, Map<string, string>>();
  private lastErrorReport = 0;

  constructor(private readonly options: LeaseReaperOptions) {
    this.client = new Redis(options.url, {
      connectTimeout: 2_000,
      retryStrategy: (times) => Math.min(100 * times, 1_000),
      maxRetriesPerRequest: 1,
    });
    this.client.on("error", (error: Error) => {
      const now = Date.now();
      if (now - this.lastErrorReport < ERROR_REPORT_INTERVAL_MS) return;
      this.lastErrorReport = now;
      options.onError?.(error);
    });
  }

  /** A worker's lease report. */
  record(owner: number, event: LeaseEvent): void {
    let leases = this.held.get(owner);
    if (event.kind === "held") {
      if (!leases) this.held.set(owner, (leases = new Map()));
      leases.set(event.key, event.token);
    } else if (leases?.get(event.key) === event.token) {
      leases.delete(event.key);
    }
  }

  /** The worker is gone: release the leases it still held. Resolves with how many were released. */
  async reap(owner: number): Promise<number> {
    const leases = this.held.get(owner);
    this.held.delete(owner);
    if (!leases?.size) return 0;
    const { keyPrefix } = this.options;
    const released = await Promise.all(
      [...leases].map(async ([key, token]) => {
        const deleted = await this.client.eval(DELETE_IF_HELD, 1, lockKey(keyPrefix, key), token).catch(() => 0);
        if (deleted !== 1) return false;
        await this.client.publish(releaseChannel(keyPrefix), key).catch(() => {});
        return true;
      }),
    );
    return released.filter(Boolean).length;
  }

  close(): void {
    this.client.disconnect();
  }
}
