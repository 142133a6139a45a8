import type { Config } from "../config/schema.ts";

/** One user's fair-share limits: each a number, or null for none. */
export interface UserLimits {
  /** Runs in progress at once (FAIR_SHARE_MAX_RUNS). */
  readonly maxRuns: number | null;
  /** Requests counted per minute (FAIR_SHARE_REQUESTS_PER_MINUTE). */
  readonly requestsPerMinute: number | null;
  /** Model tokens per UTC day (FAIR_SHARE_DAILY_TOKENS). */
  readonly dailyTokens: number | null;
}

type FairShareSettings = Pick<Config, "FAIR_SHARE_MAX_RUNS" | "FAIR_SHARE_REQUESTS_PER_MINUTE" | "FAIR_SHARE_DAILY_TOKENS" | "FAIR_SHARE_OVERRIDES">;

/**
 * Who gets which fair share, from the configuration: the defaults (each unset: none) and, per user,
 * FAIR_SHARE_OVERRIDES, whose every named limit replaces the default (null: none for that user).
 * An override may also set a limit the defaults leave off, for that user alone.
 */
export class FairShareLimits {
  /** Some user may meet some limit: the feature is on (off, nothing of it runs). */
  readonly on: boolean;
  /** Some user may meet a requests-per-minute limit. */
  readonly countsRequests: boolean;
  private readonly defaults: UserLimits;
  private readonly overrides: ReadonlyMap<string, UserLimits>;

  constructor(settings: FairShareSettings) {
    this.defaults = {
      maxRuns: settings.FAIR_SHARE_MAX_RUNS ?? null,
      requestsPerMinute: settings.FAIR_SHARE_REQUESTS_PER_MINUTE ?? null,
      dailyTokens: settings.FAIR_SHARE_DAILY_TOKENS ?? null,
    };
    const overrides = new Map<string, UserLimits>();
    for (const [user, entry] of Object.entries(settings.FAIR_SHARE_OVERRIDES)) {
      overrides.set(user, {
        maxRuns: entry.max_runs === undefined ? this.defaults.maxRuns : entry.max_runs,
        requestsPerMinute: entry.requests_per_minute === undefined ? this.defaults.requestsPerMinute : entry.requests_per_minute,
        dailyTokens: entry.daily_tokens === undefined ? this.defaults.dailyTokens : entry.daily_tokens,
      });
    }
    this.overrides = overrides;
    const all = [this.defaults, ...overrides.values()];
    this.countsRequests = all.some((limits) => limits.requestsPerMinute !== null);
    this.on = all.some((limits) => limits.maxRuns !== null || limits.requestsPerMinute !== null || limits.dailyTokens !== null);
  }

  /** The limits of `user`: their override, or the defaults. */
  of(user: string): UserLimits {
    return this.overrides.get(user) ?? this.defaults;
  }
}
