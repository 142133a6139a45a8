import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "../../src/checkpoints/sqlite-driver.ts";
import { pino } from "pino";
import { storageKey } from "../../src/auth/storage-key.ts";
import { openCheckpointBackend } from "../../src/checkpoints/backend.ts";
import { loadConfig } from "../../src/config/load.ts";
import { waitFor } from "../helpers/raw-http.ts";
import { call, startService, type RunningService } from "../helpers/service.ts";
import { DATABASE_URL, dropSchema, uniqueSchema, withClient, DATABASE_HOST, DATABASE_PORT, databaseUrlThrough } from "../helpers/postgres.ts";
import { TcpProxy } from "../helpers/tcp-proxy.ts";

type Turn = { thread_id: string; usage_metadata: { input_tokens: number } };

async function turn(service: RunningService, body: Record<string, unknown>, agent = "chatbot-agent"): Promise<Turn> {
  const res = await call(service, "POST", `/${agent}/invoke`, { input: { message: "hello there" }, ...body });
  assert.equal(res.status, 200, await res.clone().text());
  return (await res.json()) as Turn;
}

async function messageCount(service: RunningService, user: string, agent: string, thread: string): Promise<number> {
  const tuple = await service.runtime.checkpoints.saver.getTuple({ configurable: { thread_id: storageKey(user, agent, thread), checkpoint_ns: "" } });
  const messages = (tuple?.checkpoint.channel_values as { messages?: unknown[] } | undefined)?.messages;
  return messages?.length ?? 0;
}

/** Shared expectations for a persistent backend: restart keeps a conversation; identities separate it. */
function persistentBackendSuite(name: string, envFor: () => Record<string, string>) {
  test(`${name}: a conversation survives a restart`, async () => {
    let service = await startService(envFor());
    const first = await turn(service, { thread_id: "keep-me" });
    await service.close();
    service = await startService(envFor());
    try {
      const second = await turn(service, { thread_id: "keep-me" });
      assert.ok(second.usage_metadata.input_tokens > first.usage_metadata.input_tokens, "history was restored");
      assert.equal(await messageCount(service, "service", "chatbot-agent", "keep-me"), 4);
    } finally {
      await service.close();
    }
  });

  test(`${name}: two users and two agents on one public thread id are separate conversations`, async () => {
    const service = await startService(envFor());
    try {
      await turn(service, { thread_id: "shared", user_id: "ann" });
      await turn(service, { thread_id: "shared", user_id: "ann" });
      const bob = await turn(service, { thread_id: "shared", user_id: "bob" });
      const other = await turn(service, { thread_id: "shared", user_id: "ann" }, "create-agent");
      const fresh = await turn(service, { thread_id: "never-used" });
      assert.equal(bob.usage_metadata.input_tokens, fresh.usage_metadata.input_tokens, "bob starts fresh");
      assert.equal(await messageCount(service, "ann", "chatbot-agent", "shared"), 4);
      assert.equal(await messageCount(service, "bob", "chatbot-agent", "shared"), 2);
      assert.equal(await messageCount(service, "ann", "create-agent", "shared"), 2);
      assert.ok(other.thread_id === "shared");
      // Nothing is stored under the raw public id.
      const raw = await service.runtime.checkpoints.saver.getTuple({ configurable: { thread_id: "shared", checkpoint_ns: "" } });
      assert.equal(raw, undefined);
    } finally {
      await service.close();
    }
  });
}

describe("memory backend", () => {
  test("conversations persist within the process and are lost at restart", async () => {
    let service = await startService();
    await turn(service, { thread_id: "m" });
    await turn(service, { thread_id: "m" });
    assert.equal(await messageCount(service, "service", "chatbot-agent", "m"), 4);
    await service.close();
    service = await startService();
    try {
      assert.equal(await messageCount(service, "service", "chatbot-agent", "m"), 0);
    } finally {
      await service.close();
    }
  });
});

describe("SQLite backend (filedb)", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agenthost-sqlite-"));
  const file = path.join(dir, "nested", "checkpoints.sqlite");
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  persistentBackendSuite("filedb", () => ({ MEMORY_BACKEND: "filedb", FILEDB_DB_PATH: file }));

  test("filedb: the file is in WAL mode and holds only storage keys", () => {
    const db = new Database(file, { readonly: true });
    try {
      assert.equal(db.pragma("journal_mode", { simple: true }), "wal");
      const ids = db.prepare("SELECT DISTINCT thread_id FROM checkpoints").all() as Array<{ thread_id: string }>;
      assert.ok(ids.length > 0);
      for (const { thread_id } of ids) assert.match(thread_id, /^lat:v1:[0-9a-f]{64}$/);
    } finally {
      db.close();
    }
  });

  test("filedb: a write asked just before the backend closes is committed, not lost with the connection", async () => {
    const config = loadConfig({ AUTH_SECRET: "x", USE_FAKE_MODEL: "true", MEMORY_BACKEND: "filedb", FILEDB_DB_PATH: file });
    const backend = await openCheckpointBackend(config, { logger: pino({ level: "silent" }) });
    await waitFor(async () => backend.isReady(), "the file to be set up");
    // Asked in the same tick as the close: the commit group has not committed it yet when close starts.
    const taken = backend.leases.take("closing-lease", "holder-1", 60_000, Date.now());
    await backend.close();
    assert.equal(await taken, true);
    const db = new Database(file, { readonly: true });
    try {
      assert.equal(db.prepare("SELECT holder FROM agenthost_leases WHERE name = 'closing-lease'").pluck().get(), "holder-1");
    } finally {
      db.close();
    }
  });
});

describe("PostgreSQL backend (serverdb)", () => {
  const schema = uniqueSchema("spine");
  after(() => dropSchema(schema));

  persistentBackendSuite("serverdb", () => ({ MEMORY_BACKEND: "serverdb", DATABASE_URL, SERVERDB_SCHEMA: schema }));

  test("serverdb: tables live in SERVERDB_SCHEMA; the checkpoints hold only storage keys", async () => {
    await withClient(async (client) => {
      const tables = await client.query("SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1", [schema]);
      assert.deepEqual(tables.rows.map((r: { table_name: string }) => r.table_name), [
        "agenthost_idempotency",
        "agenthost_leases",
        "agenthost_messages",
        "agenthost_platform_runs",
        "agenthost_platform_threads",
        "agenthost_run_queue",
        "agenthost_threads",
        "checkpoint_blobs",
        "checkpoint_migrations",
        "checkpoint_writes",
        "checkpoints",
      ]);
      const ids = await client.query(`SELECT DISTINCT thread_id FROM "${schema}".checkpoints`);
      for (const { thread_id } of ids.rows as Array<{ thread_id: string }>) assert.match(thread_id, /^lat:v1:[0-9a-f]{64}$/);
    });
  });

  test("serverdb: schema setup is safe when several workers start at once", async () => {
    const fresh = uniqueSchema("race");
    const config = loadConfig({ AUTH_SECRET: "x", USE_FAKE_MODEL: "true", MEMORY_BACKEND: "serverdb", DATABASE_URL, SERVERDB_SCHEMA: fresh });
    try {
      const backends = await Promise.all(Array.from({ length: 6 }, () => openCheckpointBackend(config, { logger: pino({ level: "silent" }) })));
      await Promise.all(backends.map((b) => b.close()));
    } finally {
      await dropSchema(fresh);
    }
  });
});

describe("readiness follows the database", () => {
  const schema = uniqueSchema("ready");
  const proxy = new TcpProxy(DATABASE_PORT, DATABASE_HOST);
  let service: RunningService;
  before(async () => {
    const port = await proxy.start();
    service = await startService({
      MEMORY_BACKEND: "serverdb",
      DATABASE_URL: databaseUrlThrough(port),
      SERVERDB_SCHEMA: schema,
    });
  });
  after(async () => {
    await service.close();
    await proxy.stop();
    await dropSchema(schema);
  });

  test("ready fails while the database is unreachable, runs answer 503, and both recover by themselves", async () => {
    assert.equal((await fetch(`${service.url}/health/ready`)).status, 200);
    await proxy.stop();
    // Readiness reuses one check for up to a second: wait until it sees the outage.
    let ready = await fetch(`${service.url}/health/ready`);
    await waitFor(async () => (ready = await fetch(`${service.url}/health/ready`)).status === 503, "readiness to see the outage");
    assert.deepEqual(await ready.json(), { status: "unavailable", checks: ["database_unreachable"] });
    assert.equal((await fetch(`${service.url}/health/live`)).status, 200, "liveness is not readiness");
    const run = await call(service, "POST", "/invoke", { input: { message: "x" } });
    assert.equal(run.status, 503);
    assert.equal(((await run.json()) as { error_code: string }).error_code, "database_unavailable");

    await proxy.start(proxy.port);
    await waitFor(async () => (await fetch(`${service.url}/health/ready`)).status === 200, "readiness to see the database back");
    assert.equal((await call(service, "POST", "/invoke", { input: { message: "x" } })).status, 200);
  });
});
