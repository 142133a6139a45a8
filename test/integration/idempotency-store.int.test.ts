// The idempotency key store on a real SQLite file, a real PostgreSQL schema and in memory: claims,
// answers, a claim that ran out (its worker died), expiry and the sweep. Times are passed in, so
// nothing here waits for a clock.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import Database from "../../src/checkpoints/sqlite-driver.ts";
import pg from "pg";
import {
  MemoryIdempotencyStore,
  PostgresIdempotencyStore,
  SqliteIdempotencyStore,
  type IdempotencyStore,
} from "../../src/checkpoints/idempotency-store.ts";
import { DATABASE_URL, dropSchema, uniqueSchema } from "../helpers/postgres.ts";

interface Made {
  readonly store: IdempotencyStore;
  /** Rows left in the table. */
  rows(): Promise<number>;
  close(): Promise<void>;
}

/** The table as it was before answers named their run (no run_id column). */
const OLD_TABLE = `CREATE TABLE agenthost_idempotency (scope TEXT NOT NULL PRIMARY KEY, thread_id TEXT, fingerprint TEXT NOT NULL,
  status INTEGER, body TEXT, running_until BIGINT, expires_at BIGINT NOT NULL)`;

async function sqlite(old = false): Promise<Made> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agenthost-idempotency-"));
  const db = new Database(path.join(dir, "db.sqlite"));
  if (old) db.exec(OLD_TABLE);
  return {
    store: new SqliteIdempotencyStore(db),
    rows: async () => db.prepare("SELECT count(*) FROM agenthost_idempotency").pluck().get() as number,
    close: async () => {
      db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function postgres(old = false): Promise<Made> {
  const schema = uniqueSchema("t_idem");
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 2 });
  await pool.query(`CREATE SCHEMA "${schema}"`);
  if (old) await pool.query(`SET search_path TO "${schema}"; ${OLD_TABLE}`);
  const store = new PostgresIdempotencyStore(pool, schema);
  await store.setup();
  return {
    store,
    rows: async () => Number((await pool.query<{ n: string }>(`SELECT count(*) AS n FROM "${schema}".agenthost_idempotency`)).rows[0]!.n),
    close: async () => {
      await pool.end();
      await dropSchema(schema);
    },
  };
}

async function memory(): Promise<Made> {
  const store = new MemoryIdempotencyStore();
  return { store, rows: async () => Number.NaN, close: async () => {} };
}

for (const [name, make] of [["filedb", sqlite], ["serverdb", postgres], ["memory", memory]] as const) {
  describe(`idempotency store on ${name}`, () => {
    const opened: Made[] = [];
    after(async () => {
      for (const made of opened) await made.close();
    });

    test("a claim, a second claim that finds it running, the answer, a replay; expiry frees the key", async () => {
      const made = await make();
      opened.push(made);
      const { store } = made;
      const t = 1_000_000;
      assert.deepEqual(await store.claim("s1", "f1", t, t + 100, t + 1000), { claimed: true });
      assert.deepEqual(await store.claim("s1", "f1", t + 1, t + 101, t + 1001), { claimed: false, record: { fingerprint: "f1", answer: null } });
      await store.complete("s1", "lat:v1:thread", { status: 201, body: '{"ok":true}', runId: "run-1" }, t + 1000);
      // The answer holds past the first claim's running time, until it expires.
      assert.deepEqual(await store.claim("s1", "f2", t + 500, t + 600, t + 1500), {
        claimed: false,
        record: { fingerprint: "f1", answer: { status: 201, body: '{"ok":true}', runId: "run-1" } },
      });
      assert.deepEqual(await store.claim("s1", "f2", t + 1000, t + 1100, t + 2000), { claimed: true }, "expired: a new request takes the key");
    });

    test("a claim whose request never finished runs out; a released claim is free at once", async () => {
      const made = await make();
      opened.push(made);
      const { store } = made;
      const t = 2_000_000;
      assert.equal((await store.claim("s2", "f", t, t + 100, t + 10_000)).claimed, true);
      assert.equal((await store.claim("s2", "f", t + 99, t + 199, t + 10_099)).claimed, false);
      assert.equal((await store.claim("s2", "f", t + 100, t + 200, t + 10_100)).claimed, true, "the first claim ran out");
      await store.release("s2");
      assert.equal((await store.claim("s2", "g", t + 101, t + 201, t + 10_101)).claimed, true);
    });

    test("the sweep deletes expired keys only", async () => {
      const made = await make();
      opened.push(made);
      const { store } = made;
      const t = 3_000_000;
      await store.claim("old", "f", t, t + 10, t + 50);
      await store.claim("new", "f", t, t + 10, t + 500);
      await store.complete("new", null, { status: 201, body: "{}", runId: null }, t + 500);
      await store.sweep(t + 100);
      if (name !== "memory") assert.equal(await made.rows(), 1);
      assert.equal((await store.claim("new", "f", t + 101, t + 111, t + 600)).claimed, false);
      assert.equal((await store.claim("old", "f", t + 101, t + 111, t + 600)).claimed, true);
    });
  });
}

for (const [name, make] of [["filedb", sqlite], ["serverdb", postgres]] as const) {
  test(`a ${name} table made before answers named their run gets the run_id column`, async () => {
    const made = await make(true);
    try {
      const t = 4_000_000;
      assert.equal((await made.store.claim("s", "f", t, t + 10, t + 50)).claimed, true);
      await made.store.complete("s", null, { status: 409, body: "{}", runId: "run-9" }, t + 50);
      const found = await made.store.claim("s", "f", t + 1, t + 11, t + 51);
      assert.deepEqual(found, { claimed: false, record: { fingerprint: "f", answer: { status: 409, body: "{}", runId: "run-9" } } });
    } finally {
      await made.close();
    }
  });
}
