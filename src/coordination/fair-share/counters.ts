/**
 * The counters behind each user's fair share (src/admission/fair-share.ts), in the form the
 * coordination scope reaches: this process (memory-counters.ts), the workers of one host through
 * the primary (primary-counters.ts, answered by fair-share-broker.ts), or every host through Redis
 * (redis-counters.ts). Requests per minute and the day's model tokens are rate-limiter-flexible's
 * fixed-window counters; the runs a user has in progress are a semaphore of slots, each given back
 * when its run ends (and dropped with a worker that died).
 */

/** Which limit refused: runs in progress, requests per minute, or the daily model-token budget. */
export type FairShareLimit = "runs" | "rate" | "tokens";

export const FAIR_SHARE_LIMITS: readonly FairShareLimit[] = ["runs", "rate", "tokens"];

/** What to count and check for one user, each part only when named. */
export interface FairShareAsk {
  readonly user: string;
  /** Count one request; refused when it is more than this many in the user's current minute. */
  readonly requestsPerMinute?: number;
  /** Refused once the user's model tokens of the current UTC day have reached this. */
  readonly dailyTokens?: number;
  /** Take the run slot `id`; refused when the user holds `max` already. */
  readonly run?: { readonly id: string; readonly max: number };
}

export type FairShareVerdict =
  | { readonly admitted: true }
  | { readonly admitted: false; readonly limit: FairShareLimit; /** When retrying may succeed. */ readonly retryAfterMs: number };

export const ADMITTED: FairShareVerdict = Object.freeze({ admitted: true });

/**
 * A run slot frees when a run ends, which no counter can foresee: a refused run is told to retry in
 * a second.
 */
export const RUN_RETRY_MS = 1_000;

/** The length of the requests window: its counter starts with the first request and resets a minute later. */
export const MINUTE_SECONDS = 60;

export function refused(limit: FairShareLimit, retryAfterMs: number): FairShareVerdict {
  return { admitted: false, limit, retryAfterMs: Math.max(0, Math.round(retryAfterMs)) };
}

export interface FairShareCounters {
  /**
   * Count and check what `ask` names, in this order: the request (counted even when refused, as
   * every request is one), the day's tokens, then the run slot. The first limit reached refuses,
   * and what comes after it is not looked at (no slot is taken). Rejects when the counters cannot
   * be reached.
   */
  admit(ask: FairShareAsk): Promise<FairShareVerdict>;
  /** Give back run slot `id` of `user`; resolves once every worker sees it free. */
  release(user: string, id: string): Promise<void>;
  /** Add `tokens` (a positive integer) to the user's count of the current UTC day. */
  charge(user: string, tokens: number): Promise<void>;
  close(): Promise<void>;
}

/** The current UTC day: its date (the token counter's key) and the milliseconds left until it ends. */
export function utcDay(now = Date.now()): { readonly key: string; readonly msLeft: number } {
  const date = new Date(now);
  const next = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate() + 1);
  return { key: date.toISOString().slice(0, 10), msLeft: next - now };
}

/**
 * How long a day's token counter is kept, in whole seconds: to the end of the day and an hour more,
 * so a clock a little behind the others' still finds it; the next day has a key of its own.
 */
export function tokenCounterSeconds(msLeft: number): number {
  return Math.ceil(msLeft / 1000) + 3600;
}
