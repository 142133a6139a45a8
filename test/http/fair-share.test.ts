// Each user's fair share through HTTP, the service in this process (its counters in memory): the run
// limit on agenthost's own runs, streams, the Platform API's runs and background runs; requests per
// minute for token users and for a trusted caller's runs; the daily token budget counted from the AI
// messages runs add. Every refusal is a 429 with its error_code and Retry-After, comes before the run
// starts (nothing stored), is counted in agenthost_fair_share_refusals_total and logged with the user.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { utcDay } from "../../src/coordination/fair-share/counters.ts";
import { gate } from "../fixtures/gated-agent.ts";
import { TOKENS_PER_RUN } from "../fixtures/usage-agent.ts";
import { waitFor } from "../helpers/raw-http.ts";
import { call, startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";

const AGENTS = JSON.stringify(["./test/fixtures/gated-agent.ts:gatedAgent", "./test/fixtures/usage-agent.ts:usageAgent"]);
const USERS = { alice: "alice-token", bob: "bob-token", vip: "vip-token" };

const invoke = (service: RunningService, agent: string, thread: string, token: string, extra: Record<string, unknown> = {}) =>
  call(service, "POST", `/${agent}/invoke`, { input: { message: "hello" }, thread_id: thread, ...extra }, token);

/** agenthost_fair_share_refusals_total by limit, as this service counted them. */
async function refusals(service: RunningService): Promise<Record<string, number>> {
  const { values } = await service.runtime.metrics.fairShareRefusals.get();
  return Object.fromEntries(values.map((v) => [String(v.labels.limit), v.value]));
}

/** The answer is the fair share's refusal: 429, its code, a Retry-After in whole seconds. Returns Retry-After. */
async function refusedWith(response: Response, code: string): Promise<number> {
  const body = (await response.json()) as { error_code?: string; detail?: string };
  assert.equal(response.status, 429, JSON.stringify(body));
  assert.equal(body.error_code, code);
  const retryAfter = response.headers.get("retry-after");
  assert.match(retryAfter ?? "", /^[1-9]\d*$/);
  return Number(retryAfter);
}

describe("fair share: runs at once", () => {
  let service: RunningService;

  before(async () => {
    service = await startService({
      AGENT_PATHS: AGENTS,
      AUTH_USERS: JSON.stringify(USERS),
      FAIR_SHARE_MAX_RUNS: "1",
      FAIR_SHARE_OVERRIDES: JSON.stringify({ vip: { max_runs: null } }),
      BACKGROUND_POLL_INTERVAL: "0.05",
      LOG_LEVEL: "debug",
    });
  });
  after(async () => {
    gate.open();
    await service?.close();
  });

  test("a user at the limit is refused before any run starts, on every kind of run; another user is not; the slot frees as the run ends", async () => {
    const held = invoke(service, "gated-agent", "held", USERS.alice);
    await waitFor(() => gate.waiting === 1, "alice's run at the gate");

    const refusedThread = randomUUID();
    assert.equal(await refusedWith(await invoke(service, "gated-agent", refusedThread, USERS.alice), "user_run_limit"), 1);
    const stream = await call(service, "POST", "/gated-agent/stream", { input: { message: "hi" }, thread_id: randomUUID() }, USERS.alice);
    assert.match(stream.headers.get("content-type") ?? "", /json/, "refused before any stream header");
    await refusedWith(stream, "user_run_limit");
    await refusedWith(await call(service, "POST", "/runs/wait", { assistant_id: "gated-agent", input: { messages: [] } }, USERS.alice), "user_run_limit");
    await refusedWith(await call(service, "POST", "/runs/stream", { assistant_id: "gated-agent", input: { messages: [] } }, USERS.alice), "user_run_limit");

    // Nothing stored for the refused runs: no conversation, no thread record of the stateless runs.
    const history = await call(service, "GET", `/gated-agent/history?thread_id=${refusedThread}`, undefined, USERS.alice);
    assert.equal(((await history.json()) as { total: number }).total, 0);
    const threads = (await (await call(service, "GET", "/gated-agent/threads", undefined, USERS.alice)).json()) as { threads: Array<{ thread_id: string }> };
    assert.deepEqual(threads.threads.map((t) => t.thread_id), ["held"]);
    assert.deepEqual(await (await call(service, "POST", "/threads/search", {}, USERS.alice)).json(), []);

    const bobs = invoke(service, "gated-agent", "bobs", USERS.bob);
    await waitFor(() => gate.waiting === 2, "bob's run at the gate beside alice's");
    gate.open();
    assert.equal((await held).status, 200);
    assert.equal((await bobs).status, 200);
    // Answered once the slot is free: the next run goes ahead at once.
    assert.equal((await invoke(service, "usage-agent", randomUUID(), USERS.alice)).status, 200);

    assert.equal((await refusals(service)).runs, 4);
    const logged = service.logs.filter((line) => line.msg === "fair share refused");
    assert.equal(logged.length, 4);
    assert.ok(logged.every((line) => line.user_id === "alice" && line.limit === "runs"));
    assert.ok(!JSON.stringify(service.logs).includes(USERS.alice), "no log line holds a token");
  });

  test("a streamed run holds its slot until its events end", async () => {
    const response = await call(service, "POST", "/gated-agent/stream", { input: { message: "hi" }, thread_id: randomUUID() }, USERS.bob);
    assert.equal(response.status, 200);
    await waitFor(() => gate.waiting === 1, "bob's streamed run at the gate");
    await refusedWith(await invoke(service, "usage-agent", randomUUID(), USERS.bob), "user_run_limit");
    gate.open();
    assert.match(await response.text(), /data: \[DONE\]/);
    assert.equal((await invoke(service, "usage-agent", randomUUID(), USERS.bob)).status, 200);
  });

  test("an override without a run limit lets its user run more at once", async () => {
    const runs = [invoke(service, "gated-agent", randomUUID(), USERS.vip), invoke(service, "gated-agent", randomUUID(), USERS.vip)];
    await waitFor(() => gate.waiting === 2, "both of vip's runs at the gate");
    gate.open();
    assert.deepEqual((await Promise.all(runs)).map((r) => r.status), [200, 200]);
  });

  test("a background run whose user is at the limit waits in its queue, and runs once the user's run ends", async () => {
    const held = invoke(service, "gated-agent", randomUUID(), USERS.alice);
    await waitFor(() => gate.waiting === 1, "alice's run at the gate");
    const from = service.logs.length;
    const thread = (await (await call(service, "POST", "/threads", {}, USERS.alice)).json()) as { thread_id: string };
    const accepted = await call(service, "POST", `/threads/${thread.thread_id}/runs`, { assistant_id: "usage-agent", input: { messages: [{ role: "user", content: "hi" }] } }, USERS.alice);
    assert.equal(accepted.status, 200, "accepted: a run slot is taken only as it executes");
    const run = (await accepted.json()) as { run_id: string };
    await waitFor(() => service.logs.slice(from).some((line) => line.msg === "background run waits for a run slot of its user"), "the run found alice at the limit");
    const record = async () => ((await (await call(service, "GET", `/threads/${thread.thread_id}/runs/${run.run_id}`, undefined, USERS.alice)).json()) as { status: string }).status;
    assert.equal(await record(), "pending");
    gate.open();
    assert.equal((await held).status, 200);
    await waitFor(async () => (await record()) === "success", "the background run ran once alice's run ended");
    assert.equal((await refusals(service)).runs, 5, "a queued run waiting is no refusal");
  });
});

describe("fair share: requests per minute", () => {
  let service: RunningService;

  before(async () => {
    service = await startService({ AGENT_PATHS: AGENTS, AUTH_USERS: JSON.stringify(USERS), FAIR_SHARE_REQUESTS_PER_MINUTE: "3" });
  });
  after(async () => {
    await service?.close();
  });

  test("every authenticated request of a token's user counts; probes and docs never; a stop button always gets through", async () => {
    for (let i = 0; i < 4; i++) {
      assert.equal((await call(service, "GET", "/health/live", undefined, null)).status, 200);
      assert.equal((await call(service, "GET", "/openapi.json", undefined, null)).status, 200);
    }
    for (let i = 0; i < 3; i++) assert.equal((await call(service, "GET", "/info", undefined, USERS.alice)).status, 200);
    const retryAfter = await refusedWith(await call(service, "GET", "/info", undefined, USERS.alice), "user_rate_limit");
    assert.ok(retryAfter <= 60, `Retry-After ${retryAfter}: the minute's window resets by then`);
    await refusedWith(await invoke(service, "usage-agent", randomUUID(), USERS.alice), "user_rate_limit");
    assert.equal((await call(service, "POST", "/cancel", { thread_id: "any" }, USERS.alice)).status, 200);
    assert.equal((await call(service, "GET", "/info", undefined, USERS.bob)).status, 200);
    assert.equal((await refusals(service)).rate, 2);
    assert.ok(service.logs.some((line) => line.msg === "fair share refused" && line.user_id === "alice" && line.limit === "rate"));
  });

  test("a trusted caller's run-starting requests count for the user they name; its other requests do not", async () => {
    for (let i = 0; i < 5; i++) assert.equal((await call(service, "GET", "/info")).status, 200);
    for (let i = 0; i < 3; i++) assert.equal((await invoke(service, "usage-agent", randomUUID(), TEST_TOKEN, { user_id: "carol" })).status, 200);
    const thread = randomUUID();
    await refusedWith(await invoke(service, "usage-agent", thread, TEST_TOKEN, { user_id: "carol" }), "user_rate_limit");
    const history = await call(service, "GET", `/usage-agent/history?thread_id=${thread}&user_id=carol`);
    assert.equal(((await history.json()) as { total: number }).total, 0, "nothing stored for the refused run");
    await refusedWith(await call(service, "POST", "/runs/wait", { assistant_id: "usage-agent", input: { messages: [] }, config: { configurable: { user_id: "carol" } } }), "user_rate_limit");
    assert.equal((await invoke(service, "usage-agent", randomUUID(), TEST_TOKEN, { user_id: "dave" })).status, 200);
  });
});

describe("fair share: the daily token budget", () => {
  let service: RunningService;
  // Two runs' worth and one token more: a third run is admitted only if each run counted its own messages alone.
  const budget = 2 * TOKENS_PER_RUN + 1;

  before(async () => {
    service = await startService({ AGENT_PATHS: AGENTS, AUTH_USERS: JSON.stringify(USERS), FAIR_SHARE_DAILY_TOKENS: String(budget) });
  });
  after(async () => {
    await service?.close();
  });

  test("invokes count the tokens of every AI message they add; spent, the user is refused until midnight UTC", async () => {
    const thread = randomUUID();
    for (let i = 0; i < 3; i++) assert.equal((await invoke(service, "usage-agent", thread, USERS.alice)).status, 200, `run ${i + 1}`);
    const retryAfter = await refusedWith(await invoke(service, "usage-agent", thread, USERS.alice), "user_token_budget");
    assert.ok(Math.abs(retryAfter - Math.ceil(utcDay().msLeft / 1000)) <= 5, `Retry-After ${retryAfter}`);
    const history = (await (await call(service, "GET", `/usage-agent/history?thread_id=${thread}`, undefined, USERS.alice)).json()) as { total: number };
    assert.equal(history.total, 9, "three runs of three messages; nothing of the refused one");
    assert.equal((await invoke(service, "usage-agent", randomUUID(), USERS.bob)).status, 200, "another user has their own budget");
    assert.equal((await refusals(service)).tokens, 1);
  });

  test("streams and the Platform API's runs count theirs too; a background run is refused as it is accepted", async () => {
    const thread = randomUUID();
    const stream = await call(service, "POST", "/usage-agent/stream", { input: { message: "hi" }, thread_id: thread }, USERS.bob);
    assert.match(await stream.text(), /\[DONE\]/);
    const waited = await call(service, "POST", "/runs/wait", { assistant_id: "usage-agent", input: { messages: [{ role: "user", content: "hi" }] } }, USERS.bob);
    assert.equal(waited.status, 200);
    // bob: 20 (invoke above) + 20 + 20 = 60 of 41.
    await refusedWith(await call(service, "POST", "/usage-agent/stream", { input: { message: "hi" }, thread_id: thread }, USERS.bob), "user_token_budget");
    const record = (await (await call(service, "POST", "/threads", {}, USERS.bob)).json()) as { thread_id: string };
    await refusedWith(await call(service, "POST", `/threads/${record.thread_id}/runs`, { assistant_id: "usage-agent", input: null }, USERS.bob), "user_token_budget");
    const runs = (await (await call(service, "GET", `/threads/${record.thread_id}/runs`, undefined, USERS.bob)).json()) as unknown[];
    assert.deepEqual(runs, [], "the refused background run was never recorded");
  });
});

describe("fair share off", () => {
  test("no limit set: nothing counted, no middleware, no ticket", async () => {
    const service = await startService({ AGENT_PATHS: AGENTS });
    try {
      assert.equal(service.runtime.fairShare.on, false);
      for (let i = 0; i < 5; i++) assert.equal((await invoke(service, "usage-agent", randomUUID(), TEST_TOKEN)).status, 200);
      assert.deepEqual(await refusals(service), { runs: 0, rate: 0, tokens: 0 });
    } finally {
      await service.close();
    }
  });
});
