import { RateLimiterRedis } from "rate-limiter-flexible";
import { openLink, type RedisLink, type RedisSource } from "../redis-link.ts";
import { defineScript, type RedisScript } from "../redis-script.ts";
import {
  ADMITTED,
  MINUTE_SECONDS,
  refused,
  RUN_RETRY_MS,
  tokenCounterSeconds,
  utcDay,
  type FairShareAsk,
  type FairShareCounters,
  type FairShareVerdict,
} from "./counters.ts";

export type RedisFairShareOptions = RedisSource & {
  /** REDIS_KEY_PREFIX with its separator. */
  readonly keyPrefix: string;
  /** How long a run slot lasts unless renewed (REDIS_LOCK_LEASE): how long a dead process keeps its user's slots. */
  readonly leaseMs: number;
};

/** The run slots of one user: a sorted set of slot ids scored by when each lease expires. */
export const runSlotsKey = (prefix: string, user: string) => `${prefix}fair-runs:${user}`;

/** Current Redis time in ms: leases follow the server's clock, so hosts' clocks need not agree. */
const NOW = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/** Keep KEYS[1] at least ARGV[ms] more, as long as its newest lease. */
const KEEP_KEY = (ms: string) => `if redis.call('PTTL', KEYS[1]) < tonumber(${ms}) then redis.call('PEXPIRE', KEYS[1], ${ms}) end`;

/**
 * Take slot ARGV[1] of KEYS[1] for ARGV[3] ms unless ARGV[2] live slots are held: expired leases
 * (their process died) are dropped first. 1 when taken, 0 when the user is at the limit.
 */
const TAKE = `${NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
${KEEP_KEY("ARGV[3]")}
return 1`;

/** Extend slot ARGV[1] of KEYS[1] by ARGV[2] ms if it is still there (a slot that expired is not taken again). */
const RENEW = `${NOW}
local renewed = redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[2]), ARGV[1])
${KEEP_KEY("ARGV[2]")}
return renewed`;

/** How long an admit waits for the connection to come up (startup, a reconnect) before calling Redis unavailable. */
const CONNECT_WAIT_MS = 1_000;

/**
 * The fair share across every worker of every host, in Redis under REDIS_KEY_PREFIX. Requests per
 * minute (`<prefix>fair-requests:<user>`) and the day's tokens (`<prefix>fair-tokens:<user>:<date>`)
 * are rate-limiter-flexible's RateLimiterRedis counters (its atomic increment with a TTL). A user's
 * run slots are a sorted set (`<prefix>fair-runs:<user>`) of slot ids scored by their lease's expiry:
 * this process renews its slots every third of a lease while their runs live, so the slots of a
 * process that died expire within one lease and free its user's room by themselves.
 */
export class RedisFairShareCounters implements FairShareCounters {
  private readonly link: RedisLink;
  private readonly ownsLink: boolean;
  private readonly requests: RateLimiterRedis;
  private readonly tokens: RateLimiterRedis;
  private readonly take: RedisScript;
  private readonly renew: RedisScript;
  /** The slots this process holds: slot id → user. */
  private readonly held = new Map<string, string>();
  private renewTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: RedisFairShareOptions) {
    ({ link: this.link, owned: this.ownsLink } = openLink(options));
    const client = this.link.commands;
    // The limit differs per user, so each counter only counts (penalty) and the caller compares.
    const counter = (name: string, duration: number) =>
      new RateLimiterRedis({ storeClient: client, keyPrefix: `${options.keyPrefix}${name}`, points: 1, duration, rejectIfRedisNotReady: true });
    this.requests = counter("fair-requests", MINUTE_SECONDS);
    this.tokens = counter("fair-tokens", 86_400);
    this.take = defineScript(client, "agenthostFairTake", TAKE);
    this.renew = defineScript(client, "agenthostFairRenew", RENEW);
  }

  async admit(ask: FairShareAsk): Promise<FairShareVerdict> {
    await this.connected();
    const { user } = ask;
    const day = utcDay();
    // The request's count and the day's tokens are independent reads: one round trip for both.
    const [counted, used] = await Promise.all([
      ask.requestsPerMinute === undefined ? undefined : this.requests.penalty(user, 1),
      ask.dailyTokens === undefined ? undefined : this.tokens.get(`${user}:${day.key}`),
    ]);
    if (counted && counted.consumedPoints > ask.requestsPerMinute!) return refused("rate", counted.msBeforeNext);
    if (ask.dailyTokens !== undefined && (used?.consumedPoints ?? 0) >= ask.dailyTokens) return refused("tokens", day.msLeft);
    if (ask.run) {
      const { id, max } = ask.run;
      if ((await this.take(runSlotsKey(this.options.keyPrefix, user), id, max, this.options.leaseMs)) !== 1) return refused("runs", RUN_RETRY_MS);
      this.held.set(id, user);
      this.renewTimer ??= setInterval(() => this.renewAll(), Math.max(100, Math.floor(this.options.leaseMs / 3))).unref();
    }
    return ADMITTED;
  }

  async release(user: string, id: string): Promise<void> {
    if (this.held.delete(id) && this.held.size === 0) this.stopRenewing();
    // If Redis does not answer, the slot's lease runs out by itself.
    await this.link.commands.zrem(runSlotsKey(this.options.keyPrefix, user), id).catch(() => {});
  }

  async charge(user: string, tokens: number): Promise<void> {
    await this.connected();
    const day = utcDay();
    await this.tokens.penalty(`${user}:${day.key}`, tokens, { customDuration: tokenCounterSeconds(day.msLeft) });
  }

  /** Wait briefly for the command connection (it fails fast while down); reject if it stays down. */
  private async connected(): Promise<void> {
    const client = this.link.commands;
    if (client.status === "ready") return;
    await new Promise<void>((resolve, reject) => {
      const onReady = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        client.off("ready", onReady);
        reject(new Error("Redis is unavailable"));
      }, CONNECT_WAIT_MS);
      client.once("ready", onReady);
    });
  }

  /** Extend every slot still held; one that fails now is tried again at the next round, within its lease. */
  private renewAll(): void {
    for (const [id, user] of this.held) {
      this.renew(runSlotsKey(this.options.keyPrefix, user), id, this.options.leaseMs).catch(() => {});
    }
  }

  private stopRenewing(): void {
    clearInterval(this.renewTimer);
    this.renewTimer = undefined;
  }

  async close(): Promise<void> {
    // Runs have ended before a worker closes; any slot still held expires with its lease.
    this.stopRenewing();
    this.held.clear();
    if (this.ownsLink) this.link.close();
  }
}
