import { RateLimiterMemory } from "rate-limiter-flexible";
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

/**
 * Every user's fair-share counters in one process's memory: requests and the day's tokens in
 * rate-limiter-flexible's RateLimiterMemory (a fixed window per key, dropped when it ends), and the
 * run slots held, each with the owner that took it, so the slots of an owner that went away (a
 * worker that exited) are dropped at once. The primary keeps one for its workers
 * (fair-share-broker.ts); a process on its own keeps one for itself (MemoryFairShareCounters).
 *
 * Each admit checks and takes its slot in one turn of the event loop after its counts, so two admits
 * never both take the last slot.
 */
export class FairShareTable {
  // The limit differs per user, so each counter only counts (penalty) and the table compares.
  private readonly requests = new RateLimiterMemory({ keyPrefix: "requests", points: 1, duration: MINUTE_SECONDS });
  private readonly tokens = new RateLimiterMemory({ keyPrefix: "tokens", points: 1, duration: 86_400 });
  /** Run slots held: user → slot id → owner. */
  private readonly runs = new Map<string, Map<string, number>>();

  async admit(ask: FairShareAsk, owner = 0): Promise<FairShareVerdict> {
    const { user } = ask;
    if (ask.requestsPerMinute !== undefined) {
      const counted = await this.requests.penalty(user, 1);
      if (counted.consumedPoints > ask.requestsPerMinute) return refused("rate", counted.msBeforeNext);
    }
    if (ask.dailyTokens !== undefined) {
      const day = utcDay();
      const used = await this.tokens.get(`${user}:${day.key}`);
      if ((used?.consumedPoints ?? 0) >= ask.dailyTokens) return refused("tokens", day.msLeft);
    }
    if (ask.run) {
      let held = this.runs.get(user);
      if ((held?.size ?? 0) >= ask.run.max) return refused("runs", RUN_RETRY_MS);
      if (!held) this.runs.set(user, (held = new Map()));
      held.set(ask.run.id, owner);
    }
    return ADMITTED;
  }

  release(user: string, id: string): void {
    const held = this.runs.get(user);
    if (!held?.delete(id)) return;
    if (held.size === 0) this.runs.delete(user);
  }

  async charge(user: string, tokens: number): Promise<void> {
    const day = utcDay();
    await this.tokens.penalty(`${user}:${day.key}`, tokens, { customDuration: tokenCounterSeconds(day.msLeft) });
  }

  /** Drop every slot `owner` holds; returns how many. */
  drop(owner: number): number {
    let dropped = 0;
    for (const [user, held] of this.runs) {
      for (const [id, holder] of held) {
        if (holder !== owner) continue;
        held.delete(id);
        dropped++;
      }
      if (held.size === 0) this.runs.delete(user);
    }
    return dropped;
  }

  /** The run slots `user` holds now (tests, logs). */
  runsOf(user: string): number {
    return this.runs.get(user)?.size ?? 0;
  }
}

/** The fair share of a process that coordinates with no other (a service started in a test, a lone worker). */
export class MemoryFairShareCounters implements FairShareCounters {
  readonly table = new FairShareTable();

  admit(ask: FairShareAsk): Promise<FairShareVerdict> {
    return this.table.admit(ask);
  }

  async release(user: string, id: string): Promise<void> {
    this.table.release(user, id);
  }

  charge(user: string, tokens: number): Promise<void> {
    return this.table.charge(user, tokens);
  }

  async close(): Promise<void> {}
}
