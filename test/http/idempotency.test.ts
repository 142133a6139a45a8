// Idempotency-Key on invoke, history append and feedback through real HTTP, on SQLite and
// PostgreSQL (kept across a restart of the service) and the memory backend.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import Database from "better-sqlite3";
import pg from "pg";
import { waitFor } from "../helpers/raw-http.ts";
import { startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";
import { ALL_BACKENDS, TEST_DATABASE_URL, type BackendUnderTest } from "./history-backends.ts";

const AGENT = "chatbot-agent";
const ALICE_TOKEN = "alice-idempotency-token";
const AGENTS = JSON.stringify(["./test/fixtures/spine-agents.ts:slowAgent", "./test/fixtures/spine-agents.ts:failingAgent"]);

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
      assert.equal(((await resent.json()) as { feedback_id: string }).feedback_id, recorded.feedback_id);
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

    test("a failed request gives its key up: the retry runs again", async () => {
      const before = await keyRows(backend);
      const body = { input: { message: "fail" }, thread_id: "fails" };
      const first = await post(service, "/failing-agent/invoke", body, "fail-1");
      assert.equal(first.status, 500);
      assert.deepEqual(await keyRows(backend), before, "no key kept for a failure");
      const retry = await post(service, "/failing-agent/invoke", body, "fail-1");
      assert.equal(retry.status, 500);
      assert.equal(retry.headers.get("idempotent-replayed"), null);
    });
  });
}
