// Each user's fair share across the workers of one host (two workers, SQLite, no Redis): the primary
// keeps the counters. A user at each limit is refused whichever worker serves them, another user is
// not; a run slot frees when the run ends, and at once when the worker running it is SIGKILLed; the
// refusals are counted in the primary's summed metrics.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { TOKENS_PER_RUN } from "../fixtures/usage-agent.ts";
import { closePinned, eventually, metric, pidOf, pinnedConnections, request, scrape, SLOW_AGENT, startCluster, type Cluster, type PinnedConnection } from "./cluster-helper.ts";
import { STEPS_AGENT } from "./run-control-helper.ts";

const USAGE_AGENT = "./test/fixtures/usage-agent.ts:usageAgent";

describe("fair share across the workers of one host", () => {
  let cluster: Cluster;
  let onA: PinnedConnection;
  let onB: PinnedConnection;

  before(async () => {
    cluster = await startCluster({
      AGENT_PATHS: JSON.stringify([SLOW_AGENT, STEPS_AGENT, USAGE_AGENT]),
      FAIR_SHARE_MAX_RUNS: "1",
      FAIR_SHARE_OVERRIDES: JSON.stringify({ rater: { requests_per_minute: 3 }, spender: { daily_tokens: TOKENS_PER_RUN + 1 } }),
    });
    [[onA], [onB]] = (await pinnedConnections(cluster, 2, 1)) as [[PinnedConnection], [PinnedConnection]];
  });
  after(async () => {
    closePinned([[onA], [onB]].filter((list) => list[0]) as PinnedConnection[][]);
    await cluster?.stop("SIGKILL");
  });

  /** A usage-agent run of `user` (named by the trusted caller) on a new thread, over `on` (a pinned worker) or any worker. */
  const run = (user: string, on?: PinnedConnection) =>
    request(cluster.url, "POST", "/usage-agent/invoke", { input: { message: "hi" }, thread_id: randomUUID(), user_id: user }, {}, on?.agent ?? false);
  const refusal = (reply: { status: number; json<T>(): T; body: string }) => {
    assert.equal(reply.status, 429, reply.body);
    return reply.json<{ error_code: string }>().error_code;
  };

  test("requests per minute: a trusted caller's runs count for the user it names, on every worker", async () => {
    for (const on of [onA, onB, onA]) assert.equal((await run("rater", on)).status, 200);
    const refused = await run("rater", onB);
    assert.equal(refusal(refused), "user_rate_limit");
    assert.ok(Number(refused.headers["retry-after"]) >= 1 && Number(refused.headers["retry-after"]) <= 60);
    assert.equal((await run("someone-else", onB)).status, 200);
  });

  test("the daily token budget: tokens used on one worker count on the other", async () => {
    assert.equal((await run("spender", onA)).status, 200);
    assert.equal((await run("spender", onB)).status, 200, `${TOKENS_PER_RUN} of ${TOKENS_PER_RUN + 1} used`);
    assert.equal(refusal(await run("spender", onA)), "user_token_budget");
    assert.equal((await run("someone-else", onA)).status, 200);
  });

  test("runs at once: refused on the other worker while one runs; freed when it ends, and when its worker is SIGKILLed", async () => {
    const thread = randomUUID();
    const body = { input: { message: "go" }, thread_id: thread, user_id: "alice", agent_config: { steps: 1, sleep_ms: 60_000 } };
    const started = async () => {
      const history = await request(cluster.url, "GET", `/steps-agent/history?thread_id=${thread}&user_id=alice`);
      return history.status === 200 && history.json<{ total: number }>().total >= 2;
    };
    const running = request(cluster.url, "POST", "/steps-agent/invoke", body, {}, onA.agent);
    await eventually(started, 10_000, "alice's run under way on worker A");
    const refused = await run("alice", onB);
    assert.equal(refusal(refused), "user_run_limit");
    assert.equal(refused.headers["retry-after"], "1");
    assert.equal((await run("bob", onB)).status, 200);

    // The run ends (cancelled): its slot is free for the next run at once.
    assert.equal((await request(cluster.url, "POST", "/steps-agent/cancel", { thread_id: thread, user_id: "alice" }, {}, onB.agent)).status, 200);
    assert.equal((await running).status, 409);
    assert.equal((await run("alice", onB)).status, 200);

    // A worker that dies holding the slot: the primary drops it as the worker exits.
    const again = request(cluster.url, "POST", "/steps-agent/invoke", { ...body, agent_config: { steps: 1, sleep_ms: 60_000 } }, {}, onA.agent).catch(() => undefined);
    await eventually(async () => {
      const history = await request(cluster.url, "GET", `/steps-agent/history?thread_id=${thread}&user_id=alice`);
      return history.json<{ total: number }>().total >= 4;
    }, 10_000, "alice's second run under way on worker A");
    assert.equal(refusal(await run("alice", onB)), "user_run_limit");
    // Scraped while both workers answer (a worker's counts since its last report die with it).
    const samples = await scrape(cluster);
    for (const limit of ["runs", "rate", "tokens"]) assert.ok(metric(samples, "agenthost_fair_share_refusals_total", { limit }) >= 1, `${limit} refusals counted`);
    const from = cluster.logs.length;
    process.kill(pidOf(cluster, onA.worker), "SIGKILL");
    await cluster.waitForLog((line) => line.msg === "dropped a dead worker's fair-share run slots" && line.worker === onA.worker, 10_000, from);
    assert.equal((await run("alice", onB)).status, 200);
    await again;

    const refusedLines = cluster.logs.filter((line) => line.msg === "fair share refused");
    assert.deepEqual([...new Set(refusedLines.map((line) => `${String(line.user_id)}:${String(line.limit)}`))].sort(), ["alice:runs", "rater:rate", "spender:tokens"]);
  });
});
