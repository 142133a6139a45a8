// Each user's fair share below HTTP: the limits read from the configuration, the counters in one
// process (FairShareTable), the primary's form (PrimaryFairShareCounters talking to a FairShareBroker
// over in-memory channels that deliver asynchronously, like IPC), and the policy that turns a
// verdict into a refusal.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { FairShare, type FairShareReporting } from "../../src/admission/fair-share.ts";
import { FairShareLimits } from "../../src/admission/fair-share-limits.ts";
import { ConfigError, loadConfig } from "../../src/config/load.ts";
import { utcDay, type FairShareCounters, type FairShareLimit } from "../../src/coordination/fair-share/counters.ts";
import { FairShareBroker } from "../../src/coordination/fair-share/fair-share-broker.ts";
import { FairShareTable, MemoryFairShareCounters } from "../../src/coordination/fair-share/memory-counters.ts";
import { PrimaryFairShareCounters } from "../../src/coordination/fair-share/primary-counters.ts";
import { ServiceError } from "../../src/errors/service-error.ts";
import { toApiError } from "../../src/http/error-answer.ts";
import { brokeredWorkers } from "../helpers/ipc-channel.ts";

const BASE = { AUTH_SECRET: "x".repeat(12) };

const limitsOf = (env: Record<string, string>) => new FairShareLimits(loadConfig({ ...BASE, ...env }));

describe("fair-share settings", () => {
  test("off unless a limit is set; overrides replace, lift (null) or add a limit per user", () => {
    const off = limitsOf({});
    assert.equal(off.on, false);
    assert.equal(off.countsRequests, false);
    assert.deepEqual(off.of("alice"), { maxRuns: null, requestsPerMinute: null, dailyTokens: null });

    const limits = limitsOf({
      FAIR_SHARE_MAX_RUNS: "2",
      FAIR_SHARE_DAILY_TOKENS: "1000",
      FAIR_SHARE_OVERRIDES: JSON.stringify({ vip: { max_runs: null, daily_tokens: 5000 }, noisy: { requests_per_minute: 10 } }),
    });
    assert.equal(limits.on, true);
    assert.equal(limits.countsRequests, true, "one user's per-minute limit turns counting on");
    assert.deepEqual(limits.of("alice"), { maxRuns: 2, requestsPerMinute: null, dailyTokens: 1000 });
    assert.deepEqual(limits.of("vip"), { maxRuns: null, requestsPerMinute: null, dailyTokens: 5000 });
    assert.deepEqual(limits.of("noisy"), { maxRuns: 2, requestsPerMinute: 10, dailyTokens: 1000 });
  });

  test("bad settings refuse to start, naming the variable", () => {
    const refusal = (env: Record<string, string>) => {
      try {
        loadConfig({ ...BASE, ...env });
      } catch (error) {
        assert.ok(error instanceof ConfigError);
        return error.message;
      }
      assert.fail(`${JSON.stringify(env)} was accepted`);
    };
    assert.match(refusal({ FAIR_SHARE_OVERRIDES: "{alice: 1}" }), /FAIR_SHARE_OVERRIDES is not valid JSON/);
    assert.match(refusal({ FAIR_SHARE_OVERRIDES: '{"alice": {"max_runs": 0}}' }), /FAIR_SHARE_OVERRIDES alice\.max_runs/);
    assert.match(refusal({ FAIR_SHARE_OVERRIDES: '{"alice": {"runs": 2}}' }), /FAIR_SHARE_OVERRIDES alice/);
    assert.match(refusal({ FAIR_SHARE_OVERRIDES: '{"alice": {"daily_tokens": 1.5}}' }), /FAIR_SHARE_OVERRIDES alice\.daily_tokens/);
    assert.match(refusal({ FAIR_SHARE_MAX_RUNS: "0" }), /FAIR_SHARE_MAX_RUNS must be at least 1/);
    assert.match(refusal({ FAIR_SHARE_REQUESTS_PER_MINUTE: "many" }), /FAIR_SHARE_REQUESTS_PER_MINUTE must be an integer/);
  });

  test("the UTC day: its date and what is left of it", () => {
    const day = utcDay(Date.UTC(2025, 0, 31, 23, 59, 30));
    assert.deepEqual(day, { key: "2025-01-31", msLeft: 30_000 });
    assert.equal(utcDay(Date.UTC(2024, 1, 29, 0, 0, 0)).msLeft, 86_400_000);
  });
});

describe("the counters in one process", () => {
  test("requests: counted even when refused, refused past the limit until the minute's window resets", async () => {
    const table = new FairShareTable();
    for (let i = 0; i < 3; i++) assert.deepEqual(await table.admit({ user: "a", requestsPerMinute: 3 }), { admitted: true });
    const refused = await table.admit({ user: "a", requestsPerMinute: 3 });
    assert.ok(!refused.admitted && refused.limit === "rate");
    assert.ok(refused.retryAfterMs > 55_000 && refused.retryAfterMs <= 60_000, String(refused.retryAfterMs));
    assert.deepEqual(await table.admit({ user: "b", requestsPerMinute: 3 }), { admitted: true }, "another user is unaffected");
    // A user with a higher limit (an override) has room past the other's.
    assert.deepEqual(await table.admit({ user: "a", requestsPerMinute: 10 }), { admitted: true });
  });

  test("tokens: a run is refused once the day's tokens reach the budget, until midnight UTC", async () => {
    const table = new FairShareTable();
    assert.deepEqual(await table.admit({ user: "a", dailyTokens: 10 }), { admitted: true });
    await table.charge("a", 8);
    assert.deepEqual(await table.admit({ user: "a", dailyTokens: 10 }), { admitted: true }, "8 of 10 used");
    await table.charge("a", 8);
    const refused = await table.admit({ user: "a", dailyTokens: 10 });
    assert.ok(!refused.admitted && refused.limit === "tokens");
    assert.ok(Math.abs(refused.retryAfterMs - utcDay().msLeft) < 1_000);
    assert.deepEqual(await table.admit({ user: "b", dailyTokens: 10 }), { admitted: true });
  });

  test("runs: at most max slots; a release frees one; an owner's slots go with it; nothing after a refusal is taken", async () => {
    const table = new FairShareTable();
    assert.deepEqual(await table.admit({ user: "a", run: { id: "r1", max: 2 } }, 1), { admitted: true });
    assert.deepEqual(await table.admit({ user: "a", run: { id: "r2", max: 2 } }, 2), { admitted: true });
    const full = await table.admit({ user: "a", run: { id: "r3", max: 2 } }, 1);
    assert.deepEqual(full, { admitted: false, limit: "runs", retryAfterMs: 1_000 });
    assert.equal(table.runsOf("a"), 2);
    table.release("a", "r1");
    assert.equal(table.runsOf("a"), 1);
    assert.equal(table.drop(2), 1, "owner 2's slot dropped");
    assert.equal(table.runsOf("a"), 0);
    // A refusal by the request count takes no slot.
    await table.admit({ user: "c", requestsPerMinute: 1 });
    assert.equal((await table.admit({ user: "c", requestsPerMinute: 1, run: { id: "x", max: 5 } })).admitted, false);
    assert.equal(table.runsOf("c"), 0);
  });

  test("admits racing for the last slot: exactly one gets it", async () => {
    const table = new FairShareTable();
    const verdicts = await Promise.all(Array.from({ length: 10 }, (_, i) => table.admit({ user: "a", requestsPerMinute: 100, dailyTokens: 5, run: { id: `r${i}`, max: 1 } })));
    assert.equal(verdicts.filter((v) => v.admitted).length, 1);
  });
});

/** A broker (the primary) and workers reaching it over channels that deliver on the next turn, like IPC. */
function primary() {
  const broker = new FairShareBroker();
  const connect = brokeredWorkers(broker);
  const worker = () => {
    const { channel, die } = connect();
    return { counters: new PrimaryFairShareCounters(channel), die };
  };
  return { broker, worker };
}

describe("the counters in the primary", () => {
  test("every worker shares one count; a release is acknowledged; a dead worker's slots are dropped at its exit", async () => {
    const { broker, worker } = primary();
    const a = worker();
    const b = worker();
    assert.deepEqual(await a.counters.admit({ user: "u", run: { id: "r1", max: 1 } }), { admitted: true });
    const full = await b.counters.admit({ user: "u", run: { id: "r2", max: 1 } });
    assert.ok(!full.admitted && full.limit === "runs");
    assert.deepEqual(await b.counters.admit({ user: "other", run: { id: "r3", max: 1 } }), { admitted: true });
    await a.counters.release("u", "r1");
    assert.equal(broker.runsOf("u"), 0, "free in the primary once the release resolves");
    assert.deepEqual(await b.counters.admit({ user: "u", run: { id: "r4", max: 1 } }), { admitted: true });
    b.die();
    assert.equal(broker.runsOf("u"), 0);
    assert.equal(broker.runsOf("other"), 0);
    await assert.rejects(b.counters.admit({ user: "u" }), /primary is gone/);
  });

  test("requests and tokens counted across workers", async () => {
    const { worker } = primary();
    const a = worker();
    const b = worker();
    assert.ok((await a.counters.admit({ user: "u", requestsPerMinute: 2 })).admitted);
    assert.ok((await b.counters.admit({ user: "u", requestsPerMinute: 2 })).admitted);
    const rate = await a.counters.admit({ user: "u", requestsPerMinute: 2 });
    assert.ok(!rate.admitted && rate.limit === "rate");
    await a.counters.charge("u", 7);
    await b.counters.charge("u", 7);
    // A charge resolves once the primary has counted it.
    const tokens = await b.counters.admit({ user: "u", dailyTokens: 14 });
    assert.ok(!tokens.admitted && tokens.limit === "tokens");
    assert.ok((await a.counters.admit({ user: "u", dailyTokens: 15 })).admitted);
  });
});

class Reports implements FairShareReporting {
  readonly refusals: Array<[FairShareLimit, string, number]> = [];
  outages = 0;
  refused(limit: FairShareLimit, user: string, retryAfter: number): void {
    this.refusals.push([limit, user, retryAfter]);
  }
  unavailable(): void {
    this.outages++;
  }
}

describe("the policy", () => {
  const policy = (env: Record<string, string>, counters: FairShareCounters = new MemoryFairShareCounters()) => {
    const reports = new Reports();
    return { fairShare: new FairShare(limitsOf(env), counters, reports), reports, counters };
  };

  test("off: nothing counted, no ticket", async () => {
    const { fairShare } = policy({});
    assert.equal(fairShare.on, false);
    assert.equal(await fairShare.run({ user: "a", countsRequest: true }), undefined);
  });

  test("a refusal is a ServiceError answered 429 with its code and an honest Retry-After, reported once", async () => {
    const { fairShare, reports } = policy({ FAIR_SHARE_MAX_RUNS: "1", FAIR_SHARE_REQUESTS_PER_MINUTE: "2", FAIR_SHARE_DAILY_TOKENS: "10" });
    const ticket = await fairShare.run({ user: "a", countsRequest: false });
    assert.ok(ticket?.countsTokens);
    const runs = await fairShare.run({ user: "a", countsRequest: false }).catch((error: unknown) => error);
    assert.ok(runs instanceof ServiceError && runs.kind === "user_run_limit");
    const answer = toApiError(runs);
    assert.deepEqual([answer.status, answer.errorCode, answer.headers["Retry-After"]], [429, "user_run_limit", "1"]);

    ticket.charge(6);
    ticket.charge(6);
    await ticket.release();
    await ticket.release();
    const tokens = await fairShare.run({ user: "a", countsRequest: false }).catch((error: unknown) => error);
    assert.ok(tokens instanceof ServiceError && tokens.kind === "user_token_budget");
    assert.equal(Number(tokens.retryAfter), Math.ceil(utcDay().msLeft / 1000));

    await fairShare.request("b");
    await fairShare.request("b");
    const rate = await fairShare.request("b").catch((error: unknown) => error);
    assert.ok(rate instanceof ServiceError && rate.kind === "user_rate_limit");
    assert.ok(Number(rate.retryAfter) >= 59 && Number(rate.retryAfter) <= 60, rate.retryAfter);
    assert.deepEqual(reports.refusals.map(([limit, user]) => [limit, user]), [["runs", "a"], ["tokens", "a"], ["rate", "b"]]);
  });

  test("a background run: checked at acceptance, a slot only as it executes, busy (not refused) at the run limit", async () => {
    const { fairShare, reports } = policy({ FAIR_SHARE_MAX_RUNS: "1", FAIR_SHARE_DAILY_TOKENS: "5" });
    await fairShare.accept({ user: "a", countsRequest: true });
    const slot = await fairShare.slot("a");
    assert.ok(slot && slot !== "busy");
    assert.equal(await fairShare.slot("a"), "busy");
    assert.equal(reports.refusals.length, 0, "a queued run waiting is no refusal");
    slot.charge(5);
    await slot.release();
    await assert.rejects(fairShare.accept({ user: "a", countsRequest: true }), (error: unknown) => error instanceof ServiceError && error.kind === "user_token_budget");
  });

  test("counters that cannot be reached let the run go ahead and report the outage", async () => {
    const broken: FairShareCounters = {
      admit: () => Promise.reject(new Error("redis is down")),
      release: () => Promise.reject(new Error("redis is down")),
      charge: () => Promise.reject(new Error("redis is down")),
      close: async () => {},
    };
    const { fairShare, reports } = policy({ FAIR_SHARE_MAX_RUNS: "1", FAIR_SHARE_DAILY_TOKENS: "5" }, broken);
    const ticket = await fairShare.run({ user: "a", countsRequest: true });
    ticket?.charge(3);
    await ticket?.release();
    assert.ok(reports.outages >= 2);
  });
});
