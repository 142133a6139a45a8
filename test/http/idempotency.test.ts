// Idempotency-Key on invoke, history append and feedback through real HTTP, on SQLite and
// PostgreSQL (kept across a restart of the service) and the memory backend.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import Database from "../../src/checkpoints/sqlite-driver.ts";
import pg from "pg";
import { waitFor } from "../helpers/raw-http.ts";
import { startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";
import { ALL_BACKENDS, TEST_DATABASE_URL, type BackendUnderTest } from "./history-backends.ts";

const AGENT = "chatbot-agent";
const ALICE_TOKEN = "alice-idempotency-token";
const AGENTS = JSON.stringify([
  "./test/fixtures/spine-agents.ts:slowAgent",
  "./test/fixtures/spine-agents.ts:failingAgent",
  "./test/fixtures/run-control-agents.ts:stepsAgent",
]);

function post(service: RunningService, path: string, body: unknown, key?: string, token = TEST_TOKEN): Promise<Response> {
  const headers: Record<string, string> = { "content-type": "application/json", authorization: `Bearer ${token}` };
  if (key !== undefined) headers["idempotency-key"] = key;
  return fetch(service.url + path, { method: "POST", headers, body: JSON.stringify(body) });
}

/** The idempotency rows in the backend's database: [still running, answered]. */
async function keyRows(backend: BackendUnderTest): Promise<{ running: number; answered: number }> {
  const sql = "SELECT count(*) FILTER (WHERE status IS NULL) AS running, count(*) FILTER (WHERE status IS NOT NULL) AS answered FROM ";
  if (backend.name === "filedb") {
    const db = new Database(backend.env.FILEDB_DB_PATH!, { readonly: true });
    try {
      const row = db.prepare(`${sql} agenthost_idempotency`).get() as { running: number; answered: number };
      return { running: row.running, answered: row.answered };
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    const { rows } = await client.query<{ running: string; answered: string }>(`${sql} "${backend.env.SERVERDB_SCHEMA}".agenthost_idempotency`);
    return { running: Number(rows[0]!.running), answered: Number(rows[0]!.answered) };
  } finally {
    await client.end();
  }
}

/** The conversation's messages as text. */
async function messagesOf(service: RunningService, agent: string, thread: string): Promise<string[]> {
  const res = await fetch(`${service.url}/${agent}/history?thread_id=${thread}`, { headers: { authorization: `Bearer ${TEST_TOKEN}` } });
  if (res.status !== 200) throw new Error(`history answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { messages: Array<{ content: unknown }> }).messages.map((message) => String(message.content));
}

for (const makeBackend of ALL_BACKENDS) {
  const backend = makeBackend();
  const persistent = backend.name !== "memory";
  describe(`idempotency keys on ${backend.name}`, () => {
    let service: RunningService;
    const env = { ...backend.env, AGENT_PATHS: AGENTS, AUTH_USERS: JSON.stringify({ alice: ALICE_TOKEN }) };
    before(async () => {
      service = await startService(env);
    });
    after(async () => {
      await service.close();
      await backend.cleanup();
    });

    test("a retried invoke replays the first answer without running again, also after a restart", async () => {
      const body = { input: { message: "run me once" } };
      const first = await post(service, `/${AGENT}/invoke`, body, "invoke-1");
      assert.equal(first.status, 200);
      assert.equal(first.headers.get("idempotent-replayed"), null);
      const answer = (await first.json()) as { thread_id: string; run_id: string };

      const again = await post(service, `/${AGENT}/invoke`, body, "invoke-1");
      assert.equal(again.status, 200);
      assert.equal(again.headers.get("idempotent-replayed"), "true");
      assert.equal(again.headers.get("x-run-id"), answer.run_id, "a replay names the first run");
      assert.match(again.headers.get("content-type") ?? "", /application\/json/);
      assert.deepEqual(await again.json(), answer);

      const history = await fetch(`${service.url}/${AGENT}/history?thread_id=${answer.thread_id}`, { headers: { authorization: `Bearer ${TEST_TOKEN}` } });
      assert.equal(((await history.json()) as { total: number }).total, 2, "the turn ran once");

      if (persistent) {
        await service.close();
        service = await startService(env);
        const afterRestart = await post(service, `/${AGENT}/invoke`, body, "invoke-1");
        assert.equal(afterRestart.status, 200);
        assert.equal(afterRestart.headers.get("idempotent-replayed"), "true");
        assert.equal(afterRestart.headers.get("x-run-id"), answer.run_id);
        assert.deepEqual(await afterRestart.json(), answer);
      }

      // Another caller's key of the same name is its own.
      const alice = await post(service, `/${AGENT}/invoke`, body, "invoke-1", ALICE_TOKEN);
      assert.equal(alice.status, 200);
      assert.equal(alice.headers.get("idempotent-replayed"), null);
      assert.notEqual(((await alice.json()) as { run_id: string }).run_id, answer.run_id);
    });

    test("the same key with another body or operation is refused with 422 idempotency_key_reused", async () => {
      assert.equal((await post(service, `/${AGENT}/invoke`, { input: { message: "one" }, thread_id: "reuse" }, "reuse-1")).status, 200);
      // Key order does not make another body.
      const reordered = await post(service, `/${AGENT}/invoke`, { thread_id: "reuse", input: { message: "one" } }, "reuse-1");
      assert.equal(reordered.headers.get("idempotent-replayed"), "true");
      for (const [path, body] of [
        [`/${AGENT}/invoke`, { input: { message: "two" }, thread_id: "reuse" }],
        [`/${AGENT}/history/add_messages`, { thread_id: "reuse", messages: [{ type: "human", content: "one" }] }],
      ] as const) {
        const res = await post(service, path, body, "reuse-1");
        assert.equal(res.status, 422);
        assert.equal(((await res.json()) as { error_code: string }).error_code, "idempotency_key_reused");
      }
    });

    test("a history append and a feedback are replayed, not repeated", async () => {
      const body = { thread_id: "append-once", messages: [{ type: "human", content: "only once" }] };
      const first = await post(service, `/${AGENT}/history/add_messages`, body, "append-1");
      assert.equal(first.status, 201);
      const firstBody = await first.json();
      const again = await post(service, `/${AGENT}/history/add_messages`, body, "append-1");
      assert.equal(again.status, 201);
      assert.equal(again.headers.get("idempotent-replayed"), "true");
      assert.deepEqual(await again.json(), firstBody);
      const history = await fetch(`${service.url}/${AGENT}/history?thread_id=append-once`, { headers: { authorization: `Bearer ${TEST_TOKEN}` } });
      assert.equal(((await history.json()) as { total: number }).total, 1);

      const feedback = { run_id: "some-run", key: "helpful", score: 1 };
      const sent = await post(service, `/${AGENT}/feedback`, feedback, "feedback-1");
      assert.equal(sent.status, 201);
      const recorded = (await sent.json()) as { feedback_id: string };
      const resent = await post(service, `/${AGENT}/feedback`, feedback, "feedback-1");
      assert.equal(resent.status, 201);
      assert.equal(resent.headers.get("idempotent-replayed"), "true");
      assert.equal(resent.headers.get("x-run-id"), null, "a feedback started no run");
      assert.equal(((await resent.json()) as { feedback_id: string }).feedback_id, recorded.feedback_id);
    });

    test("a run cancelled after a step keeps its 409: the retry replays it and the turn is not run again", async () => {
      const body = { input: { message: "go" }, thread_id: "cancel-once", agent_config: { steps: 1, sleep_ms: 60_000 } };
      const first = post(service, "/steps-agent/invoke", body, "cancel-1");
      await waitFor(async () => (await messagesOf(service, "steps-agent", "cancel-once")).length === 2, "the run's step checkpointed");
      const cancel = await post(service, "/steps-agent/cancel", { thread_id: "cancel-once" });
      assert.equal(((await cancel.json()) as { cancelled: boolean }).cancelled, true);
      const stopped = await first;
      assert.equal(stopped.status, 409);
      const stoppedBody = (await stopped.json()) as { error_code: string };
      assert.equal(stoppedBody.error_code, "run_cancelled");

      const retry = await post(service, "/steps-agent/invoke", body, "cancel-1");
      assert.equal(retry.status, 409);
      assert.equal(retry.headers.get("idempotent-replayed"), "true");
      assert.ok(stopped.headers.get("x-run-id"));
      assert.equal(retry.headers.get("x-run-id"), stopped.headers.get("x-run-id"), "the replayed failure names the first run");
      assert.deepEqual(await retry.json(), stoppedBody);
      assert.deepEqual(await messagesOf(service, "steps-agent", "cancel-once"), ["go", "step 1"], "the turn ran once");
    });

    test("a request refused before its run started gives its key up: the retry runs", async () => {
      // Refused by validation: no key is claimed at all.
      const invalid = await post(service, `/${AGENT}/invoke`, { input: { message: "x" }, agent_config: "not an object" }, "early-1");
      assert.equal(invalid.status, 422);
      // Refused under the key: the conversation is busy with another request (THREAD_QUEUE_TIMEOUT 0).
      const holder = post(service, "/slow-agent/invoke", { input: { message: "hold" }, thread_id: "busy-once", agent_config: { sleep_ms: 60_000 } });
      // Holding it, its input stored (a cancel before that would leave no "hold" behind).
      await waitFor(async () => service.runtime.activeRuns.size === 1 && (await messagesOf(service, "slow-agent", "busy-once").catch(() => [])).length === 1, "the other request holding the conversation");
      const body = { input: { message: "after the other" }, thread_id: "busy-once", agent_config: { sleep_ms: 0 } };
      const busy = await post(service, "/slow-agent/invoke", body, "early-1");
      assert.equal(busy.status, 409);
      assert.equal(((await busy.json()) as { error_code: string }).error_code, "conversation_busy");
      assert.equal((await post(service, "/slow-agent/cancel", { thread_id: "busy-once" })).status, 200);
      assert.equal((await holder).status, 409);

      const retry = await post(service, "/slow-agent/invoke", body, "early-1");
      assert.equal(retry.status, 200);
      assert.equal(retry.headers.get("idempotent-replayed"), null, "the retry ran");
      assert.deepEqual(await messagesOf(service, "slow-agent", "busy-once"), ["hold", "after the other", "done sleeping"]);
    });

    test("a bad key is refused with 422 validation_failed", async () => {
      for (const key of ["x".repeat(256), "has space"]) {
        const res = await post(service, `/${AGENT}/invoke`, { input: { message: "x" } }, key);
        assert.equal(res.status, 422);
        assert.equal(((await res.json()) as { error_code: string }).error_code, "validation_failed");
      }
    });

    if (!persistent) return;

    test("while the first request runs a retry gets 409 idempotency_in_progress; afterwards the answer", async () => {
      const body = { input: { message: "slow" }, thread_id: "slow-once", agent_config: { sleep_ms: 2000 } };
      const before = await keyRows(backend);
      const first = post(service, "/slow-agent/invoke", body, "slow-1");
      await waitFor(async () => (await keyRows(backend)).running === before.running + 1, "the first request's claim");
      const during = await post(service, "/slow-agent/invoke", body, "slow-1");
      assert.equal(during.status, 409);
      assert.equal(during.headers.get("retry-after"), "1");
      assert.equal(((await during.json()) as { error_code: string }).error_code, "idempotency_in_progress");

      const done = await first;
      assert.equal(done.status, 200);
      const answer = await done.json();
      const replay = await post(service, "/slow-agent/invoke", body, "slow-1");
      assert.equal(replay.headers.get("idempotent-replayed"), "true");
      assert.deepEqual(await replay.json(), answer);
    });

    test("a run that failed after it began keeps its failure: the retry replays it, also after a restart", async () => {
      const before = await keyRows(backend);
      const body = { input: { message: "fail" }, thread_id: "fails" };
      const first = await post(service, "/failing-agent/invoke", body, "fail-1");
      assert.equal(first.status, 500);
      const failure = await first.json();
      assert.deepEqual(await keyRows(backend), { running: before.running, answered: before.answered + 1 }, "the failure kept");
      const retry = await post(service, "/failing-agent/invoke", body, "fail-1");
      assert.equal(retry.status, 500);
      assert.equal(retry.headers.get("idempotent-replayed"), "true");
      assert.deepEqual(await retry.json(), failure);
      assert.deepEqual(await messagesOf(service, "failing-agent", "fails"), ["fail", ""], "one turn: the input and the first step");

      await service.close();
      service = await startService(env);
      const afterRestart = await post(service, "/failing-agent/invoke", body, "fail-1");
      assert.equal(afterRestart.status, 500);
      assert.equal(afterRestart.headers.get("idempotent-replayed"), "true");
    });

    test("a refusal under the key keeps nothing: the claim is deleted", async () => {
      const before = await keyRows(backend);
      const holder = post(service, "/slow-agent/invoke", { input: { message: "hold" }, thread_id: "busy-rows", agent_config: { sleep_ms: 60_000 } });
      await waitFor(() => service.runtime.activeRuns.size === 1, "the other request holding the conversation");
      const busy = await post(service, "/slow-agent/invoke", { input: { message: "x" }, thread_id: "busy-rows" }, "busy-rows-1");
      assert.equal(busy.status, 409);
      assert.deepEqual(await keyRows(backend), before, "no key kept for a refusal");
      await post(service, "/slow-agent/cancel", { thread_id: "busy-rows" });
      assert.equal((await holder).status, 409);
    });
  });
}
