import type { Redis } from "ioredis";
import { defineScript } from "../redis-script.ts";

/** The lease of one conversation: a string key holding its holder's token, with a TTL. */
export const lockKey = (prefix: string, key: string) => `${prefix}lock:${key}`;
/** The waiters of one conversation: a sorted set of waiter ids scored by their deadlines. */
export const queueKey = (prefix: string, key: string) => `${prefix}queue:${key}`;
/** Where a freed conversation's key is announced, to wake its waiters. */
export const releaseChannel = (prefix: string) => `${prefix}lock-released`;

/** Set KEYS[1]'s TTL to ARGV[2] ms only if it still holds the token ARGV[1]. */
const EXTEND_IF_HELD = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`;

/** Delete KEYS[1] only if it still holds the token ARGV[1]: a lease nobody else has taken since. */
const DELETE_IF_HELD = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

/** Current Redis time in ms; the queue uses the server's clock so hosts' clocks need not agree. */
const NOW = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/**
 * Join the waiters of one conversation (KEYS[1]) unless ARGV[3] are already waiting. Expired
 * entries (waiters that crashed or gave up without leaving) are dropped first. ARGV: waiter id,
 * wait ms, max waiters.
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

/** The lock's operations on one Redis, each one atomic. Every call rejects when Redis does not answer. */
export interface LockScripts {
  /** Store `token` in `lock` for `ms` if nobody holds it (SET NX PX); false when someone does. */
  take(lock: string, token: string, ms: number): Promise<boolean>;
  /** Renew `lock` for `ms` if it still holds `token`; false when it does not (expired, or taken over). */
  extend(lock: string, token: string, ms: number): Promise<boolean>;
  /** Delete `lock` if it still holds `token`; false when it does not. */
  drop(lock: string, token: string): Promise<boolean>;
  /** Join `queue` as `id` for `waitMs` unless `maxWaiters` wait already; false when full. */
  enqueue(queue: string, id: string, waitMs: number, maxWaiters: number): Promise<boolean>;
  /** The oldest live waiter of `queue` ('' when none), and whether `id` is still in it. */
  head(queue: string, id: string): Promise<{ readonly head: string; readonly queued: boolean }>;
  /** Leave `queue`. */
  leave(queue: string, id: string): Promise<void>;
}

/** The lock's scripts, loaded once per connection (EVALSHA after the first call). */
export function lockScripts(client: Redis): LockScripts {
  const extend = defineScript(client, "agenthostExtendIfHeld", EXTEND_IF_HELD);
  const drop = defineScript(client, "agenthostDeleteIfHeld", DELETE_IF_HELD);
  const enqueue = defineScript(client, "agenthostEnqueue", ENQUEUE);
  const head = defineScript(client, "agenthostHead", HEAD);
  return {
    take: async (lock, token, ms) => (await client.set(lock, token, "PX", ms, "NX")) === "OK",
    extend: async (lock, token, ms) => (await extend(lock, token, ms)) === 1,
    drop: async (lock, token) => (await drop(lock, token)) === 1,
    enqueue: async (queue, id, waitMs, maxWaiters) => (await enqueue(queue, id, waitMs, maxWaiters)) === 1,
    head: async (queue, id) => {
      const [first, queued] = (await head(queue, id)) as [string, number];
      return { head: first, queued: queued === 1 };
    },
    leave: async (queue, id) => {
      await client.zrem(queue, id);
    },
  };
}
