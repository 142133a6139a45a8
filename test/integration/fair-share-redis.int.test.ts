// Each user's fair share across hosts, on the real Redis: the counters themselves (two processes'
// worth of RedisFairShareCounters sharing a key prefix), a dead process's run slots freed when their
// lease runs out, and two services ("hosts") sharing one Redis through HTTP: one user at each limit
// refused on either host, another user unaffected. Each test keeps to a key prefix of its own.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { Redis } from "ioredis";
import { utcDay } from "../../src/coordination/fair-share/counters.ts";
import { RedisFairShareCounters, runSlotsKey } from "../../src/coordination/fair-share/redis-counters.ts";
import { gate } from "../fixtures/gated-agent.ts";
import { TOKENS_PER_RUN } from "../fixtures/usage-agent.ts";
import { waitFor } from "../helpers/raw-http.ts";
import { REDIS_URL } from "../helpers/redis.ts";
import { call, startService, type RunningService } from "../helpers/service.ts";

const redis = new Redis(REDIS_URL);
after(() => redis.disconnect());

async function dropKeys(prefix: string): Promise<void> {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length) await redis.del(...keys);
}

describe("the counters in Redis", () => {
  const prefix = `agenthost-test:${randomUUID()}:`;
  const open: RedisFairShareCounters[] = [];
  const counters = (leaseMs = 10_000) => {
    const made = new RedisFairShareCounters({ url: REDIS_URL, keyPrefix: prefix, leaseMs });
    open.push(made);
    return made;
  };
  after(async () => {
    await Promise.all(open.map((c) => c.close()));
    await dropKeys(prefix);
  });

  test("requests and tokens counted across processes, in rate-limiter-flexible's keys under the prefix", async () => {
    const [a, b] = [counters(), counters()];
    assert.ok((await a.admit({ user: "u", requestsPerMinute: 2 })).admitted);
    assert.ok((await b.admit({ user: "u", requestsPerMinute: 2 })).admitted);
    const rate = await a.admit({ user: "u", requestsPerMinute: 2 });
    assert.ok(!rate.admitted && rate.limit === "rate");
    assert.ok(rate.retryAfterMs > 55_000 && rate.retryAfterMs <= 60_000, String(rate.retryAfterMs));
    assert.ok((await b.admit({ user: "v", requestsPerMinute: 2 })).admitted, "another user is unaffected");
    const ttl = await redis.pttl(`${prefix}fair-requests:u`);
    assert.ok(ttl > 0 && ttl <= 60_000, `the window's key expires with it (${ttl} ms)`);

    await a.charge("u", 7);
    await b.charge("u", 7);
    const day = utcDay();
    assert.equal(await redis.get(`${prefix}fair-tokens:u:${day.key}`), "14");
    const tokens = await a.admit({ user: "u", dailyTokens: 14 });
    assert.ok(!tokens.admitted && tokens.limit === "tokens");
    assert.ok(Math.abs(tokens.retryAfterMs - day.msLeft) < 2_000);
    assert.ok((await b.admit({ user: "u", dailyTokens: 15 })).admitted);
    assert.ok((await redis.pttl(`${prefix}fair-tokens:u:${day.key}`)) > day.msLeft - 2_000, "kept to the end of the day at least");
  });

  test("run slots: at most max across processes; a release frees one at once; nothing is taken after a refusal", async () => {
    const [a, b] = [counters(), counters()];
    assert.ok((await a.admit({ user: "r", run: { id: "1", max: 2 } })).admitted);
    assert.ok((await b.admit({ user: "r", run: { id: "2", max: 2 } })).admitted);
    assert.deepEqual(await b.admit({ user: "r", run: { id: "3", max: 2 } }), { admitted: false, limit: "runs", retryAfterMs: 1_000 });
    assert.equal(await redis.zcard(runSlotsKey(prefix, "r")), 2);
    await a.release("r", "1");
    assert.ok((await b.admit({ user: "r", run: { id: "4", max: 2 } })).admitted);
    await b.admit({ user: "s", requestsPerMinute: 1 });
    assert.equal((await b.admit({ user: "s", requestsPerMinute: 1, run: { id: "5", max: 9 } })).admitted, false);
    assert.equal(await redis.zcard(runSlotsKey(prefix, "s")), 0);
    await b.release("r", "2");
    await b.release("r", "4");
  });

  test("a live process renews its slots past their lease; a dead one's expire within it", async () => {
    const leaseMs = 600;
    const [living, dying, other] = [counters(leaseMs), counters(leaseMs), counters(leaseMs)];
    assert.ok((await living.admit({ user: "l", run: { id: "kept", max: 1 } })).admitted);
    assert.ok((await dying.admit({ user: "d", run: { id: "lost", max: 1 } })).admitted);
    const taken = Date.now();
    // The process dies: it stops renewing and never releases.
    await dying.close();
    assert.equal((await other.admit({ user: "d", run: { id: "x", max: 1 } })).admitted, false, "still held within the lease");
    await waitFor(async () => (await other.admit({ user: "d", run: { id: "after", max: 1 } })).admitted, "the dead process's slot expired", 5_000);
    assert.ok(Date.now() - taken >= leaseMs - 50, "not before its lease ran out");
    // Meanwhile the living process's slot, taken as long ago, is still held: renewed.
    await waitFor(() => Date.now() - taken > 2 * leaseMs, "two leases' time", 5_000);
    assert.equal((await other.admit({ user: "l", run: { id: "y", max: 1 } })).admitted, false);
    await living.release("l", "kept");
    assert.ok((await other.admit({ user: "l", run: { id: "z", max: 1 } })).admitted);
  });

  test("Redis that does not answer is an error the caller sees (the policy lets the run go ahead)", async () => {
    const unreachable = new RedisFairShareCounters({ url: "redis://127.0.0.1:1", keyPrefix: prefix, leaseMs: 1_000 });
    try {
      await assert.rejects(unreachable.admit({ user: "u", requestsPerMinute: 1, run: { id: "1", max: 1 } }));
    } finally {
      await unreachable.close();
    }
  });
});

const AGENTS = JSON.stringify(["./test/fixtures/gated-agent.ts:gatedAgent", "./test/fixtures/usage-agent.ts:usageAgent"]);
const USERS = { alice: "alice-token", bob: "bob-token" };

describe("two hosts sharing Redis", () => {
  const prefix = `agenthost-test-${randomUUID()}`;
  let hostA: RunningService;
  let hostB: RunningService;

  before(async () => {
    const shared = {
      AGENT_PATHS: AGENTS,
      AUTH_USERS: JSON.stringify(USERS),
      REDIS_URL,
      REDIS_KEY_PREFIX: prefix,
      FAIR_SHARE_MAX_RUNS: "1",
      FAIR_SHARE_OVERRIDES: JSON.stringify({ rater: { requests_per_minute: 3 }, spender: { daily_tokens: TOKENS_PER_RUN + 1 } }),
    };
    [hostA, hostB] = await Promise.all([startService(shared), startService(shared)]);
  });
  after(async () => {
    gate.open();
    await Promise.all([hostA?.close(), hostB?.close()]);
    await dropKeys(prefix);
  });

  const invoke = (host: RunningService, agent: string, token: string, user?: string) =>
    call(host, "POST", `/${agent}/invoke`, { input: { message: "hi" }, thread_id: randomUUID(), ...(user ? { user_id: user } : {}) }, token);
  const refusals = async (host: RunningService, limit: string) =>
    (await host.runtime.metrics.fairShareRefusals.get()).values.find((v) => v.labels.limit === limit)?.value ?? 0;

  test("runs: a user running on one host is refused on the other; another user is not; the slot frees as the run ends", async () => {
    const held = invoke(hostA, "gated-agent", USERS.alice);
    await waitFor(() => gate.waiting === 1, "alice's run at the gate on host A");
    const refused = await invoke(hostB, "usage-agent", USERS.alice);
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get("retry-after"), "1");
    assert.equal(((await refused.json()) as { error_code: string }).error_code, "user_run_limit");
    const bobs = invoke(hostB, "gated-agent", USERS.bob);
    await waitFor(() => gate.waiting === 2, "bob's run at the gate on host B");
    gate.open();
    assert.deepEqual([(await held).status, (await bobs).status], [200, 200]);
    assert.equal((await invoke(hostB, "usage-agent", USERS.alice)).status, 200);
    assert.equal(await refusals(hostB, "runs"), 1);
    assert.equal(await refusals(hostA, "runs"), 0);
  });

  test("requests per minute and the day's tokens are counted across the hosts", async () => {
    // A trusted caller naming "rater": its runs count as the user's requests.
    const secret = "test-secret-token";
    for (const host of [hostA, hostB, hostA]) assert.equal((await invoke(host, "usage-agent", secret, "rater")).status, 200);
    const rate = await invoke(hostB, "usage-agent", secret, "rater");
    assert.equal(rate.status, 429);
    assert.equal(((await rate.json()) as { error_code: string }).error_code, "user_rate_limit");
    assert.equal((await invoke(hostB, "usage-agent", secret, "other")).status, 200);

    assert.equal((await invoke(hostA, "usage-agent", secret, "spender")).status, 200);
    assert.equal((await invoke(hostB, "usage-agent", secret, "spender")).status, 200, `${TOKENS_PER_RUN} of ${TOKENS_PER_RUN + 1} used`);
    const spent = await invoke(hostA, "usage-agent", secret, "spender");
    assert.equal(spent.status, 429);
    assert.equal(((await spent.json()) as { error_code: string }).error_code, "user_token_budget");
    assert.equal(Number(await redis.get(`${prefix}:fair-tokens:spender:${utcDay().key}`)), 2 * TOKENS_PER_RUN);
    assert.equal((await refusals(hostB, "rate")) + (await refusals(hostA, "tokens")), 2);
  });
});
