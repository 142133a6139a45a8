import { randomUUID } from "node:crypto";
import type { FairShareAsk, FairShareCounters, FairShareLimit } from "../coordination/fair-share/counters.ts";
import { ServiceError, type ServiceErrorKind } from "../errors/service-error.ts";
import type { FairShareLimits, UserLimits } from "./fair-share-limits.ts";

/**
 * A run admitted under its user's fair share: it holds one of the user's run slots (when a run
 * limit applies) and gathers the model tokens of the AI messages the run adds (when a daily budget
 * applies). `release` gives the slot back and adds the tokens to the user's day, once, however the
 * run ended; it resolves when every worker sees the slot free.
 */
export interface RunTicket {
  /** A daily budget applies: the run reports its tokens through `charge`. */
  readonly countsTokens: boolean;
  charge(tokens: number): void;
  release(): Promise<void>;
}

/** Where refusals and unreachable counters are reported (the metric and the log line). */
export interface FairShareReporting {
  /** A request or run of `user` refused by `limit`. */
  refused(limit: FairShareLimit, user: string, retryAfterSeconds: number): void;
  /** The counters could not be reached: the request went ahead unlimited. */
  unavailable(error: unknown): void;
}

/** Who a run counts for, and whether it is also the request counted against the per-minute limit. */
export interface RunShare {
  readonly user: string;
  /**
   * Count the run's request against the user's requests per minute: for a trusted caller naming the
   * user (a caller whose token gives its own user was counted as its request arrived).
   */
  readonly countsRequest: boolean;
}

const KINDS: Readonly<Record<FairShareLimit, ServiceErrorKind>> = { runs: "user_run_limit", rate: "user_rate_limit", tokens: "user_token_budget" };

function detailOf(limit: FairShareLimit, limits: UserLimits): string {
  switch (limit) {
    case "runs":
      return `This user already has ${limits.maxRuns} run(s) in progress, as many as its fair share allows; retry when one has ended.`;
    case "rate":
      return `This user has sent ${limits.requestsPerMinute} request(s) this minute, as many as its fair share allows; retry after Retry-After seconds.`;
    case "tokens":
      return `This user has used its budget of ${limits.dailyTokens} model tokens for the day; it renews at midnight UTC (Retry-After).`;
  }
}

/**
 * Each user's fair share across every worker and host (docs/fair-share.md): at most N runs in
 * progress at once, at most M requests per minute, and a daily model-token budget, from
 * FAIR_SHARE_* (FairShareLimits) over the scope's counters (src/coordination/fair-share/). Every
 * refusal comes before any run starts or anything is stored, as a ServiceError (429 with its own
 * error_code and Retry-After), counted and logged. Off (no limit configured), every method returns
 * at once without touching a counter; a user without limits costs no round trip either.
 *
 * Counters that cannot be reached (Redis down) do not stop the service: the request goes ahead
 * unlimited and the outage is reported (`unavailable`), as a limit is a guard, not a dependency.
 */
export class FairShare {
  constructor(
    private readonly limits: FairShareLimits,
    private readonly counters: FairShareCounters | undefined,
    private readonly reporting: FairShareReporting,
  ) {}

  /** Some limit is configured (and counted): without one, nothing here runs. */
  get on(): boolean {
    return this.limits.on && this.counters !== undefined;
  }

  /** Some user may meet a requests-per-minute limit: authenticated requests are counted. */
  get countsRequests(): boolean {
    return this.limits.countsRequests && this.counters !== undefined;
  }

  /** One authenticated request of `user`, the user its token gives: counted, refused past the user's requests per minute. */
  async request(user: string): Promise<void> {
    const { requestsPerMinute } = this.limits.of(user);
    if (requestsPerMinute === null || !this.counters) return;
    await this.decide(user, { user, requestsPerMinute });
  }

  /**
   * A run about to start (agenthost's own API, a Platform streamed or waited run): its request
   * counted when `countsRequest`, the day's tokens checked, and a run slot taken. Undefined when
   * no limit applies to the user.
   */
  async run(share: RunShare): Promise<RunTicket | undefined> {
    const limits = this.limits.of(share.user);
    return this.admitted(share.user, limits, {
      user: share.user,
      ...(share.countsRequest && limits.requestsPerMinute !== null ? { requestsPerMinute: limits.requestsPerMinute } : {}),
      ...(limits.dailyTokens !== null ? { dailyTokens: limits.dailyTokens } : {}),
    });
  }

  /**
   * A background run being accepted into the queue: its request counted when `countsRequest`, and
   * the day's tokens checked. It takes a run slot only once it executes (`slot`).
   */
  async accept(share: RunShare): Promise<void> {
    const limits = this.limits.of(share.user);
    const ask: FairShareAsk = {
      user: share.user,
      ...(share.countsRequest && limits.requestsPerMinute !== null ? { requestsPerMinute: limits.requestsPerMinute } : {}),
      ...(limits.dailyTokens !== null ? { dailyTokens: limits.dailyTokens } : {}),
    };
    if (ask.requestsPerMinute === undefined && ask.dailyTokens === undefined) return;
    await this.decide(share.user, ask);
  }

  /**
   * A background run about to execute: a run slot, and nothing else counted or checked (that was
   * done when it was accepted). Resolves with the ticket, or `"busy"` when the user is at the run
   * limit: the run stays queued, like a run whose thread is busy, and is neither refused nor
   * counted as a refusal.
   */
  async slot(user: string): Promise<RunTicket | "busy" | undefined> {
    const limits = this.limits.of(user);
    if (!this.counters || (limits.maxRuns === null && limits.dailyTokens === null)) return undefined;
    const id = limits.maxRuns === null ? undefined : randomUUID();
    if (id !== undefined) {
      let verdict;
      try {
        verdict = await this.counters.admit({ user, run: { id, max: limits.maxRuns! } });
      } catch (error) {
        this.reporting.unavailable(error);
        return this.ticket(user, undefined, limits);
      }
      if (!verdict.admitted) return "busy";
    }
    return this.ticket(user, id, limits);
  }

  /** Count and check `ask` plus a run slot when a run limit applies; the ticket of the run admitted. */
  private async admitted(user: string, limits: UserLimits, ask: FairShareAsk): Promise<RunTicket | undefined> {
    const id = limits.maxRuns === null ? undefined : randomUUID();
    const full: FairShareAsk = id === undefined ? ask : { ...ask, run: { id, max: limits.maxRuns! } };
    if (full.requestsPerMinute === undefined && full.dailyTokens === undefined && full.run === undefined) return undefined;
    const taken = await this.decide(user, full);
    return this.ticket(user, taken ? id : undefined, limits);
  }

  /**
   * Ask the counters; a refusal is reported and thrown. Resolves true when admitted, false when the
   * counters could not answer (the request goes ahead, with no slot taken).
   */
  private async decide(user: string, ask: FairShareAsk): Promise<boolean> {
    let verdict;
    try {
      verdict = await this.counters!.admit(ask);
    } catch (error) {
      this.reporting.unavailable(error);
      return false;
    }
    if (verdict.admitted) return true;
    const retryAfter = Math.max(1, Math.ceil(verdict.retryAfterMs / 1000));
    this.reporting.refused(verdict.limit, user, retryAfter);
    throw new ServiceError(KINDS[verdict.limit], { detail: detailOf(verdict.limit, this.limits.of(user)), retryAfter: String(retryAfter) });
  }

  private ticket(user: string, slot: string | undefined, limits: UserLimits): RunTicket | undefined {
    if (slot === undefined && limits.dailyTokens === null) return undefined;
    return new Ticket(this.counters!, user, slot, limits.dailyTokens !== null, (error) => this.reporting.unavailable(error));
  }
}

class Ticket implements RunTicket {
  private tokens = 0;
  private released: Promise<void> | undefined;

  constructor(
    private readonly counters: FairShareCounters,
    private readonly user: string,
    private readonly slot: string | undefined,
    readonly countsTokens: boolean,
    private readonly failed: (error: unknown) => void,
  ) {}

  charge(tokens: number): void {
    if (Number.isFinite(tokens) && tokens > 0) this.tokens += tokens;
  }

  release(): Promise<void> {
    this.released ??= this.settle();
    return this.released;
  }

  private async settle(): Promise<void> {
    const tokens = Math.round(this.tokens);
    await Promise.all([
      this.slot === undefined ? undefined : this.counters.release(this.user, this.slot).catch(this.failed),
      this.countsTokens && tokens > 0 ? this.counters.charge(this.user, tokens).catch(this.failed) : undefined,
    ]);
  }
}
