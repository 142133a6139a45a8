// Online retention on the live service, on SQLite and PostgreSQL: a sweep deletes the conversations
// whose time ran out (CONVERSATION_TTL after their last update, or a Platform thread's own `ttl`)
// whole, and touches nothing else: a recent conversation, a locked one, one paused on an interrupt,
// one with a queued run and a Platform thread whose own ttl is longer all survive. Conversations are
// aged by writing their stored times back, so nothing waits on the clock.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import Database from "../../src/checkpoints/sqlite-driver.ts";
import pg from "pg";
import { Client } from "@langchain/langgraph-sdk";
import { storageKey } from "../../src/auth/storage-key.ts";
import { call, startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";
import { memoryBackend, postgresBackend, sqliteBackend, TEST_DATABASE_URL, type BackendUnderTest } from "../http/history-backends.ts";

const CHATBOT = "chatbot-agent";
const ASK = "ask-name";
const STEPS = "steps-agent";
const AGENTS = JSON.stringify(["./test/fixtures/interrupt-agents.ts:askName", "./test/fixtures/run-control-agents.ts:stepsAgent"]);
const HOUR = 3_600_000;

/**
 * Run `sql` with `params` on the backend's database (the SQLite file, or the PostgreSQL schema):
 * the first column of the first row for a query, the rows changed for a statement.
 */
async function onDatabase(backend: BackendUnderTest, sql: string, params: unknown[]): Promise<number> {
  const reads = /^\s*select/i.test(sql);
  if (backend.name === "filedb") {
    const db = new Database(backend.env.FILEDB_DB_PATH!);
    try {
      const statement = db.prepare(sql.replaceAll(/\$\d+/g, "?"));
      return Number(reads ? statement.pluck().get(...params) : statement.run(...params).changes);
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    await client.query(`SET search_path TO "${backend.env.SERVERDB_SCHEMA}"`);
    const result = await client.query(sql, params);
    return reads ? Number(Object.values(result.rows[0] as Record<string, unknown>)[0]) : (result.rowCount ?? 0);
  } finally {
    await client.end();
  }
}

for (const make of [sqliteBackend, postgresBackend]) {
  describe(`online retention (${make().name})`, { concurrency: false }, () => {
    let backend: BackendUnderTest;
    let service: RunningService;
    let client: Client;

    before(async () => {
      backend = make();
      service = await startService({
        ...backend.env,
        AGENT_PATHS: AGENTS,
        CONVERSATION_TTL: String(HOUR / 1000),
        // Sweeps are run by the test.
        RETENTION_SWEEP_INTERVAL: "3600",
      });
      client = new Client({ apiUrl: service.url, apiKey: TEST_TOKEN });
    });
    after(async () => {
      await service?.close();
      await backend?.cleanup();
    });

    /** Make a conversation look last updated `ms` ago (its list entry, and its Platform thread's record). */
    const age = async (threadId: string, ms: number) => {
      const at = Date.now() - ms;
      await onDatabase(backend, "UPDATE agenthost_threads SET updated_at = $1 WHERE public_thread_id = $2", [at, threadId]);
      await onDatabase(backend, "UPDATE agenthost_platform_threads SET updated_at = $1 WHERE thread_id = $2", [at, threadId]);
    };
    const invoke = (agent: string, threadId: string, message: string, headers: Record<string, string> = {}) =>
      fetch(`${service.url}/${agent}/invoke`, {
        method: "POST",
        headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json", ...headers },
        body: JSON.stringify({ input: { message }, thread_id: threadId }),
      });
    const messagesOf = async (agent: string, threadId: string) =>
      ((await (await call(service, "GET", `/${agent}/history?thread_id=${threadId}`)).json()) as { total: number }).total;
    const key = (agent: string, threadId: string) => storageKey("service", agent, threadId);

    test("a sweep deletes expired conversations whole and leaves the recent, locked, paused, queued and longer-lived ones", async () => {
      const tag = Math.random().toString(36).slice(2, 8);
      const [old, recent, locked, paused, queued, short, long] = ["old", "recent", "locked", "paused", "queued", "short", "long"].map((name) => `${name}-${tag}`);
      assert.equal((await invoke(CHATBOT, old!, "forget me", { "idempotency-key": `idem-${tag}` })).status, 200);
      assert.equal((await invoke(CHATBOT, recent!, "keep me")).status, 200);
      assert.equal((await invoke(CHATBOT, locked!, "hold me")).status, 200);
      assert.equal((await invoke(ASK, paused!, "hello")).status, 200);
      await client.threads.create({ threadId: queued });
      await client.runs.wait(queued!, STEPS, { input: { messages: [{ role: "user", content: "bind" }] }, config: { configurable: { steps: 1 } } });
      const waiting = await client.runs.create(queued!, STEPS, { input: null, afterSeconds: 3600 });
      await client.threads.create({ threadId: short, ttl: 1 });
      await client.runs.wait(short!, CHATBOT, { input: { messages: [{ role: "user", content: "short-lived" }] } });
      await client.threads.create({ threadId: long, ttl: { ttl: 60 * 24, strategy: "delete" } });
      await client.runs.wait(long!, CHATBOT, { input: { messages: [{ role: "user", content: "long-lived" }] } });
      const idempotent = () => onDatabase(backend, "SELECT count(*) FROM agenthost_idempotency WHERE thread_id = $1", [key(CHATBOT, old!)]);
      assert.equal(await idempotent(), 1);
      for (const threadId of [old, locked, paused, queued, long]) await age(threadId!, 2 * HOUR);
      await age(short!, 2 * 60_000);

      const held = await service.runtime.locks.acquire(key(CHATBOT, locked!));
      assert.ok(held.ok);
      const deletedBefore = (await service.runtime.metrics.registry.getSingleMetric("agenthost_retention_deleted_total")?.get())?.values[0]?.value ?? 0;
      await service.runtime.retention.sweep();
      await held.lease.release();

      // Gone whole: checkpoints, messages, list entry, idempotency answers, Platform records.
      assert.equal(await messagesOf(CHATBOT, old!), 0);
      assert.equal(await onDatabase(backend, "SELECT count(*) FROM checkpoints WHERE thread_id = $1", [key(CHATBOT, old!)]), 0);
      assert.equal(await onDatabase(backend, "SELECT count(*) FROM agenthost_threads WHERE thread_id = $1", [key(CHATBOT, old!)]), 0);
      assert.equal(await idempotent(), 0);
      await assert.rejects(client.threads.get(short!), (error: { status?: number }) => error.status === 404);
      assert.equal(await onDatabase(backend, "SELECT count(*) FROM agenthost_platform_runs WHERE thread_id = $1", [short]), 0);
      // Left alone.
      assert.equal(await messagesOf(CHATBOT, recent!), 2);
      assert.equal(await messagesOf(CHATBOT, locked!), 2);
      assert.ok((await messagesOf(ASK, paused!)) > 0);
      assert.equal((await client.runs.get(queued!, waiting.run_id)).status, "pending");
      assert.equal((await client.threads.get(long!)).thread_id, long);
      const deleted = (await service.runtime.metrics.registry.getSingleMetric("agenthost_retention_deleted_total")?.get())?.values[0]?.value ?? 0;
      assert.equal(deleted - deletedBefore, 2);
      const line = service.logs.findLast((entry) => entry.msg === "retention sweep");
      assert.equal(line?.deleted, 2);
      assert.deepEqual(line?.skipped, { locked: 1, interrupted: 1, queued: 1 });

      // Once free, the locked one goes with the next sweep; a conversation started again under its id starts empty.
      await service.runtime.retention.sweep();
      assert.equal(await messagesOf(CHATBOT, locked!), 0);
      assert.equal((await invoke(CHATBOT, old!, "a new life")).status, 200);
      assert.equal(await messagesOf(CHATBOT, old!), 2);
      await client.runs.cancel(queued!, waiting.run_id);
    });

    test("side tables return to their baseline once their rows' time is up: finished runs' records and idempotency answers", async () => {
      const size = async () => ({
        runs: await onDatabase(backend, "SELECT count(*) FROM agenthost_platform_runs", []),
        answers: await onDatabase(backend, "SELECT count(*) FROM agenthost_idempotency", []),
      });
      // What the previous test left expired goes first.
      await service.runtime.retention.sweep();
      const baseline = await size();
      const thread = await client.threads.create();
      const own = `traffic-${Math.random().toString(36).slice(2, 8)}`;
      for (let i = 0; i < 6; i++) {
        await client.runs.wait(thread.thread_id, CHATBOT, { input: { messages: [{ role: "user", content: `run ${i}` }] } });
        assert.equal((await invoke(CHATBOT, own, `call ${i}`, { "idempotency-key": `${own}-${i}` })).status, 200);
      }
      assert.deepEqual(await size(), { runs: baseline.runs + 6, answers: baseline.answers + 6 });
      // Their time is up (RUN_RECORD_TTL after the run ended; IDEMPOTENCY_TTL after the answer).
      await onDatabase(backend, "UPDATE agenthost_platform_runs SET updated_at = 0 WHERE thread_id = $1", [thread.thread_id]);
      await onDatabase(backend, "UPDATE agenthost_idempotency SET expires_at = 0 WHERE thread_id = $1", [key(CHATBOT, own)]);
      await service.runtime.retention.sweep();
      assert.deepEqual(await size(), baseline);
      // The conversations themselves are not expired: they stay.
      assert.equal(((await client.threads.getState(thread.thread_id)).values as { messages: unknown[] }).messages.length, 12);
      assert.equal(await messagesOf(CHATBOT, own), 12);
    });
  });
}

for (const make of [sqliteBackend, postgresBackend]) {
  test(`conversations a sweep leaves do not hold back those behind them: it reads on past them while reads come back full, and the next sweep starts from the start again (${make().name})`, async () => {
    const backend = make();
    // Two candidates per read: the two paused conversations, the oldest, fill a whole one.
    const service = await startService({ ...backend.env, AGENT_PATHS: AGENTS, CONVERSATION_TTL: String(HOUR / 1000), RETENTION_SWEEP_INTERVAL: "3600" }, { retentionBatch: 2 });
    try {
      const invoke = (agent: string, threadId: string) => call(service, "POST", `/${agent}/invoke`, { input: { message: "hello" }, thread_id: threadId });
      const messagesOf = async (agent: string, threadId: string) =>
        ((await (await call(service, "GET", `/${agent}/history?thread_id=${threadId}`)).json()) as { total: number }).total;
      for (const [agent, threadId, hours] of [[ASK, "first", 4], [ASK, "second", 3], [CHATBOT, "behind", 2]] as const) {
        assert.equal((await invoke(agent, threadId)).status, 200);
        await onDatabase(backend, "UPDATE agenthost_threads SET updated_at = $1 WHERE public_thread_id = $2", [Date.now() - hours * HOUR, threadId]);
      }
      const sweep = async () => {
        await service.runtime.retention.sweep();
        const line = service.logs.findLast((entry) => entry.msg === "retention sweep");
        return { deleted: line?.deleted, skipped: line?.skipped };
      };
      // A full read of the two paused ones, then on past them: the one behind goes in the same sweep.
      assert.deepEqual(await sweep(), { deleted: 1, skipped: { interrupted: 2 } });
      assert.equal(await messagesOf(CHATBOT, "behind"), 0);
      // The next sweep starts from the start again: the paused ones are looked at once more.
      assert.deepEqual(await sweep(), { deleted: 0, skipped: { interrupted: 2 } });
      assert.ok((await messagesOf(ASK, "first")) > 0);
      assert.ok((await messagesOf(ASK, "second")) > 0);
    } finally {
      await service.close();
      await backend.cleanup();
    }
  });
}

for (const make of [memoryBackend, sqliteBackend, postgresBackend]) {
  describe(`compaction: CHECKPOINT_KEEP_LATEST (${make().name})`, { concurrency: false }, () => {
    let backend: BackendUnderTest;
    let service: RunningService;
    let client: Client;

    before(async () => {
      backend = make();
      service = await startService({ ...backend.env, AGENT_PATHS: AGENTS, CHECKPOINT_KEEP_LATEST: "3", RETENTION_SWEEP_INTERVAL: "3600" });
      client = new Client({ apiUrl: service.url, apiKey: TEST_TOKEN });
    });
    after(async () => {
      await service?.close();
      await backend?.cleanup();
    });

    test("a conversation keeps its latest 3 checkpoints; its messages, its history pages and a paused interrupt stay right", async () => {
      const thread = await client.threads.create();
      for (let turn = 1; turn <= 5; turn++) {
        await client.runs.wait(thread.thread_id, CHATBOT, { input: { messages: [{ role: "user", content: `turn ${turn}` }] } });
      }
      const before = await client.threads.getHistory(thread.thread_id, { limit: 100 });
      assert.ok(before.length > 3);
      const paused = await client.threads.create();
      await client.runs.wait(paused.thread_id, ASK, { input: { messages: [{ role: "user", content: "hi" }] } });

      await service.runtime.retention.sweep();
      const after = await client.threads.getHistory(thread.thread_id, { limit: 100 });
      assert.deepEqual(after.map((state) => state.checkpoint.checkpoint_id), before.slice(0, 3).map((state) => state.checkpoint.checkpoint_id));
      const state = await client.threads.getState(thread.thread_id);
      const contents = (state.values as { messages: Array<{ content: string }> }).messages.map((message) => message.content);
      assert.equal(contents.length, 10);
      assert.deepEqual(contents.filter((_, i) => i % 2 === 0), ["turn 1", "turn 2", "turn 3", "turn 4", "turn 5"]);
      const page = (await (await call(service, "GET", `/${CHATBOT}/history?thread_id=${thread.thread_id}&limit=4&offset=2`)).json()) as { total: number; messages: unknown[] };
      assert.equal(page.total, 10);
      assert.equal(page.messages.length, 4);
      // The next turn goes on from the latest; the paused one resumes.
      await client.runs.wait(thread.thread_id, CHATBOT, { input: { messages: [{ role: "user", content: "turn 6" }] } });
      assert.equal(((await client.threads.getState(thread.thread_id)).values as { messages: unknown[] }).messages.length, 12);
      assert.equal((await client.threads.getState(paused.thread_id)).next.length, 1, "still paused on its interrupt");
      const resumed = (await client.runs.wait(paused.thread_id, ASK, { command: { resume: "Ada" } })) as { messages: Array<{ content: string }> };
      assert.match(String(resumed.messages.at(-1)?.content), /Ada/);
      const compacted = (await service.runtime.metrics.registry.getSingleMetric("agenthost_checkpoints_compacted_total")?.get())?.values[0]?.value ?? 0;
      assert.ok(compacted >= before.length - 3);
    });
  });
}
