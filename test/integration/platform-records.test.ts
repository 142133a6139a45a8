// The Platform API's records (threads and runs) in memory, in a real SQLite file and in a real
// PostgreSQL schema, through the same cases: creation and duplicates, one user never seeing
// another's, metadata merges and exact metadata filters, every order, paging, runs, and inputs
// made of SQL and JSON-path metacharacters. Then the gate: a database that is not set up, or busy,
// answers DatabaseUnavailableError. Times are passed in, so nothing here waits for a clock.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import Database from "../../src/checkpoints/sqlite-driver.ts";
import { MemorySaver } from "@langchain/langgraph";
import pg from "pg";
import { DatabaseUnavailableError } from "../../src/checkpoints/database-errors.ts";
import { DatabaseGate, type OpenDatabase } from "../../src/checkpoints/guarded-saver.ts";
import { GuardedPlatformRecords } from "../../src/checkpoints/guarded-stores.ts";
import {
  MemoryPlatformRecords,
  type JsonObject,
  type PlatformRecords,
  type PlatformRun,
  type PlatformThread,
  type ThreadSearch,
  type ThreadStatus,
} from "../../src/checkpoints/platform-records.ts";
import { PostgresPlatformRecords, SqlitePlatformRecords } from "../../src/checkpoints/platform-records-sql.ts";
import { ReadableSerde } from "../../src/checkpoints/readable-serde.ts";
import { SaverLatestCheckpoints } from "../../src/checkpoints/latest-checkpoints.ts";
import { DATABASE_URL, dropSchema, uniqueSchema, withClient } from "../helpers/postgres.ts";

interface Made {
  readonly records: PlatformRecords;
  /** Rows left in the runs table (NaN for memory). */
  runRows(): Promise<number>;
  close(): Promise<void>;
}

function sqliteFile(): { file: string; remove: () => void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agenthost-platform-"));
  return { file: path.join(dir, "db.sqlite"), remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

async function sqlite(): Promise<Made> {
  const { file, remove } = sqliteFile();
  const db = new Database(file);
  return {
    records: new SqlitePlatformRecords(db),
    runRows: async () => db.prepare("SELECT count(*) FROM agenthost_platform_runs").pluck().get() as number,
    close: async () => {
      db.close();
      remove();
    },
  };
}

async function postgres(): Promise<Made> {
  const schema = uniqueSchema("t_platform");
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 2 });
  await pool.query(`CREATE SCHEMA "${schema}"`);
  const records = new PostgresPlatformRecords(pool, schema);
  await records.setup();
  await records.setup(); // a second worker's setup changes nothing
  return {
    records,
    runRows: async () => Number((await pool.query<{ n: string }>(`SELECT count(*) AS n FROM "${schema}".agenthost_platform_runs`)).rows[0]!.n),
    close: async () => {
      await pool.end();
      await dropSchema(schema);
    },
  };
}

async function memory(): Promise<Made> {
  return { records: new MemoryPlatformRecords(new SaverLatestCheckpoints(new MemorySaver())), runRows: async () => Number.NaN, close: async () => {} };
}

const ALICE = "alice";
const BOB = "bob";

function thread(threadId: string, fields: Partial<Omit<PlatformThread, "threadId" | "updatedAt">> = {}): Omit<PlatformThread, "updatedAt"> {
  return { userId: ALICE, threadId, agentId: null, metadata: {}, status: "idle", createdAt: 1_000, ttlMs: null, ...fields };
}

function run(threadId: string, runId: string, fields: Partial<PlatformRun> = {}): PlatformRun {
  return {
    userId: ALICE,
    threadId,
    runId,
    agentId: "agent-a",
    status: "pending",
    metadata: {},
    kwargs: { input: { messages: [{ type: "human", content: "hi" }] }, stream_mode: ["values"] },
    multitaskStrategy: "reject",
    createdAt: 1_000,
    updatedAt: 1_000,
    base: null,
    ...fields,
  };
}

const page = (fields: Partial<ThreadSearch> = {}): ThreadSearch => ({ sortBy: "thread_id", sortOrder: "asc", offset: 0, limit: 100, ...fields });
const idsOf = (threads: readonly PlatformThread[]): string[] => threads.map((t) => t.threadId);
const runIdsOf = (runs: readonly PlatformRun[]): string[] => runs.map((r) => r.runId);

/** Names that are SQL, LIKE, JSON-path and JSON metacharacters. */
const HOSTILE = [
  "'; DROP TABLE agenthost_platform_threads; --",
  '" OR 1=1 --',
  "a.b",
  '$."x"',
  "%",
  "_",
  "back\\slash",
  "$1",
  "?",
  "@user",
  "\n\t",
  "😀",
];

for (const [name, make] of [["memory", memory], ["filedb", sqlite], ["serverdb", postgres]] as const) {
  describe(`Platform records on ${name}`, () => {
    const opened: Made[] = [];
    after(async () => {
      for (const made of opened) await made.close();
    });
    async function records(): Promise<PlatformRecords> {
      const made = await make();
      opened.push(made);
      return made.records;
    }

    test("create, a duplicate changes nothing, get; another user's thread of the same id is another thread", async () => {
      const store = await records();
      const created = await store.createThread(thread("t1", { metadata: { a: 1 }, createdAt: 5_000 }));
      assert.deepEqual(created, { userId: ALICE, threadId: "t1", agentId: null, metadata: { a: 1 }, status: "idle", createdAt: 5_000, updatedAt: 5_000, ttlMs: null });
      assert.equal(await store.createThread(thread("t1", { metadata: { b: 2 }, agentId: "x", status: "busy", createdAt: 6_000 })), undefined);
      assert.deepEqual(await store.getThread(ALICE, "t1"), created);
      assert.equal(await store.getThread(ALICE, "t2"), undefined);

      assert.equal(await store.getThread(BOB, "t1"), undefined);
      const bobs = await store.createThread(thread("t1", { userId: BOB, metadata: { bob: true }, createdAt: 7_000 }));
      assert.deepEqual(bobs?.metadata, { bob: true });
      assert.deepEqual((await store.getThread(ALICE, "t1"))?.metadata, { a: 1 });
    });

    test("another user's thread does not exist for update, delete, search, count or runs", async () => {
      const store = await records();
      await store.createThread(thread("mine", { metadata: { k: "v" } }));
      await store.putRun(run("mine", "r1"));
      const before = await store.getThread(ALICE, "mine");

      assert.equal(await store.updateThread(BOB, "mine", { metadata: { k: "stolen" }, agentId: "evil", status: "busy", now: 9_000 }), undefined);
      assert.equal(await store.deleteThread(BOB, "mine"), false);
      assert.deepEqual(await store.searchThreads(BOB, page()), []);
      assert.deepEqual(await store.searchThreads(BOB, page({ ids: ["mine"], metadata: { k: "v" } })), []);
      assert.equal(await store.countThreads(BOB, {}), 0);
      assert.equal(await store.getRun(BOB, "mine", "r1"), undefined);
      assert.equal(await store.getRunWithThread(BOB, "mine", "r1"), undefined);
      assert.deepEqual(await store.listRuns(BOB, "mine", { offset: 0, limit: 10 }), []);
      assert.equal(await store.setRunStatus(BOB, "mine", "r1", "error", 9_000), undefined);
      assert.equal(await store.deleteRun(BOB, "mine", "r1"), false);

      assert.deepEqual(await store.getThread(ALICE, "mine"), before);
      assert.equal((await store.getRun(ALICE, "mine", "r1"))?.status, "pending");
      assert.equal(await store.countThreads(ALICE, {}), 1);
    });

    test("update merges metadata key by key (null kept as null, nested objects replaced), binds the agent once, sets status and time", async () => {
      const store = await records();
      await store.createThread(thread("t", { metadata: { a: 1, keep: "k", nested: { x: 1, y: { z: 2 } }, list: [1, 2] } }));

      const merged = await store.updateThread(ALICE, "t", { metadata: { a: null, nested: { x: 9 }, list: [], added: { deep: [null, "s"] } }, now: 2_000 });
      assert.deepEqual(merged?.metadata, { a: null, keep: "k", nested: { x: 9 }, list: [], added: { deep: [null, "s"] } });
      assert.equal(merged?.updatedAt, 2_000);
      assert.equal(merged?.createdAt, 1_000);
      assert.equal(merged?.status, "idle");
      assert.equal(merged?.agentId, null);
      assert.deepEqual(await store.getThread(ALICE, "t"), merged);
      assert.deepEqual(idsOf(await store.searchThreads(ALICE, page({ metadata: { a: null } }))), ["t"], "a key set to null is present, with null");

      const bound = await store.updateThread(ALICE, "t", { agentId: "agent-a", status: "busy", now: 3_000 });
      assert.equal(bound?.agentId, "agent-a");
      assert.equal(bound?.status, "busy");
      assert.deepEqual(bound?.metadata, merged?.metadata, "no metadata given: none changed");

      const again = await store.updateThread(ALICE, "t", { agentId: "agent-b", metadata: {}, now: 4_000 });
      assert.equal(again?.agentId, "agent-a", "a bound thread stays with its agent");
      assert.equal(again?.status, "busy", "no status given: unchanged");
      assert.equal(again?.updatedAt, 4_000);

      await store.createThread(thread("born-bound", { agentId: "agent-x" }));
      assert.equal((await store.updateThread(ALICE, "born-bound", { agentId: "agent-y", now: 2_000 }))?.agentId, "agent-x");
      assert.equal(await store.updateThread(ALICE, "absent", { now: 2_000 }), undefined);
    });

    test("what goes in is copied, and changing what comes back changes nothing stored", async () => {
      const store = await records();
      // A database's records are fresh objects; the memory records' are the stored ones, frozen.
      const change = (what: () => void) => {
        try {
          what();
        } catch (error) {
          assert.ok(error instanceof TypeError, String(error));
        }
      };
      const metadata: JsonObject = { a: { b: 1 } };
      const created = await store.createThread(thread("t", { metadata }));
      (metadata.a as JsonObject).b = 5;
      change(() => ((created!.metadata.a as JsonObject).b = 2));
      const got = await store.getThread(ALICE, "t");
      change(() => (got!.metadata.c = 3));
      change(() => ((got as { status: string }).status = "busy"));
      const [listed] = await store.searchThreads(ALICE, page({}));
      change(() => (listed!.metadata.d = 4));
      assert.deepEqual((await store.getThread(ALICE, "t"))?.metadata, { a: { b: 1 } });
      assert.equal((await store.getThread(ALICE, "t"))?.status, "idle");

      const kwargs: JsonObject = { input: { messages: ["hi"] } };
      await store.putRun(run("t", "r", { kwargs }));
      (kwargs.input as { messages: string[] }).messages.push("later");
      const stored = await store.getRun(ALICE, "t", "r");
      change(() => (stored!.kwargs.input as { messages: string[] }).messages.push("changed"));
      change(() => ((stored as { status: string }).status = "error"));
      const [again] = await store.listRuns(ALICE, "t", { offset: 0, limit: 10 });
      assert.deepEqual(again?.kwargs, { input: { messages: ["hi"] } });
      assert.equal(again?.status, "pending");
    });

    test("metadata filters match every given key with an equal JSON value, exactly", async () => {
      const store = await records();
      const x = { s: "v", n: 1, f: 1.5, b: true, o: { p: 1, q: [1, { r: "s" }] }, arr: ["a", 1], z: null, 'we"ird': "q", "a.b": 1, "": "empty" };
      const y = { s: "v", n: 2, f: 2.5, b: false, o: { p: 1 }, arr: [1, "a"], a: { b: 1 }, "1": "one" };
      await store.createThread(thread("x", { metadata: x }));
      await store.createThread(thread("y", { metadata: y }));
      await store.createThread(thread("none"));
      const found = async (metadata: JsonObject) => idsOf(await store.searchThreads(ALICE, page({ metadata })));

      assert.deepEqual(await found({}), ["none", "x", "y"]);
      assert.deepEqual(await found({ s: "v" }), ["x", "y"]);
      assert.deepEqual(await found({ s: "V" }), []);
      assert.deepEqual(await found({ n: 1 }), ["x"]);
      assert.deepEqual(await found({ n: "1" }), [], "a string is not a number");
      assert.deepEqual(await found({ f: 1.5 }), ["x"]);
      assert.deepEqual(await found({ b: true }), ["x"]);
      assert.deepEqual(await found({ b: false }), ["y"]);
      assert.deepEqual(await found({ b: 1 }), [], "a number is not a boolean");
      assert.deepEqual(await found({ n: true }), [], "a boolean is not a number");
      assert.deepEqual(await found({ o: { q: [1, { r: "s" }], p: 1 } }), ["x"], "nested objects are equal whatever their key order");
      assert.deepEqual(await found({ o: { p: 1 } }), ["y"], "a nested object must be equal, not contained");
      assert.deepEqual(await found({ o: { q: [{ r: "s" }, 1], p: 1 } }), [], "arrays are ordered");
      assert.deepEqual(await found({ arr: ["a", 1] }), ["x"]);
      assert.deepEqual(await found({ arr: ["a"] }), []);
      assert.deepEqual(await found({ o: "[object Object]" }), []);
      assert.deepEqual(await found({ z: null }), ["x"], "null matches a key stored as null, not a missing key");
      assert.deepEqual(await found({ missing: null }), []);
      assert.deepEqual(await found({ 'we"ird': "q" }), ["x"]);
      assert.deepEqual(await found({ "a.b": 1 }), ["x"], "a dotted key is one key, not a path");
      assert.deepEqual(await found({ a: { b: 1 } }), ["y"]);
      assert.deepEqual(await found({ "": "empty" }), ["x"]);
      assert.deepEqual(await found({ "1": "one" }), ["y"]);
      assert.deepEqual(await found({ s: "v", n: 2 }), ["y"], "every key must match");
      assert.deepEqual(await found({ s: "v", n: 3 }), []);
      assert.equal(await store.countThreads(ALICE, { metadata: { s: "v" } }), 2);
      assert.equal(await store.countThreads(ALICE, { metadata: { o: { p: 1 } } }), 1);
    });

    test("status and ids filters, alone and together with metadata; count ignores paging", async () => {
      const store = await records();
      for (const [id, status] of [["a", "idle"], ["b", "busy"], ["c", "busy"], ["d", "error"]] as const) {
        await store.createThread(thread(id, { metadata: { even: id === "b" || id === "d" } }));
        await store.updateThread(ALICE, id, { status, now: 2_000 });
      }
      assert.deepEqual(idsOf(await store.searchThreads(ALICE, page({ status: "busy" }))), ["b", "c"]);
      assert.deepEqual(idsOf(await store.searchThreads(ALICE, page({ status: "interrupted" }))), []);
      assert.deepEqual(idsOf(await store.searchThreads(ALICE, page({ ids: ["c", "a", "zz"] }))), ["a", "c"]);
      assert.deepEqual(idsOf(await store.searchThreads(ALICE, page({ ids: [] }))), [], "no ids: no thread");
      assert.deepEqual(idsOf(await store.searchThreads(ALICE, page({ ids: ["%", "_"] }))), [], "ids are not patterns");
      assert.deepEqual(idsOf(await store.searchThreads(ALICE, page({ status: "busy", metadata: { even: true } }))), ["b"]);
      assert.deepEqual(idsOf(await store.searchThreads(ALICE, page({ status: "busy", ids: ["a", "c", "d"] }))), ["c"]);
      assert.equal(await store.countThreads(ALICE, {}), 4);
      assert.equal(await store.countThreads(ALICE, { status: "busy" }), 2);
      assert.equal(await store.countThreads(ALICE, { ids: ["a", "b", "zz"] }), 2);
      assert.equal(await store.countThreads(ALICE, { status: "busy", metadata: { even: false }, ids: ["c"] }), 1);
    });

    test("every sort column in both orders, ties broken by thread id", async () => {
      const store = await records();
      const rows: Array<[string, number, number, ThreadStatus]> = [
        ["t-c", 100, 500, "idle"],
        ["t-a", 200, 300, "busy"],
        ["t-e", 200, 500, "error"],
        ["t-b", 300, 100, "idle"],
        ["t-d", 400, 300, "interrupted"],
      ];
      for (const [id, created, updated, status] of rows) {
        await store.createThread(thread(id, { createdAt: created }));
        await store.updateThread(ALICE, id, { status, now: updated });
      }
      const expected: Record<ThreadSearch["sortBy"], Record<ThreadSearch["sortOrder"], string>> = {
        thread_id: { asc: "a b c d e", desc: "e d c b a" },
        created_at: { asc: "c a e b d", desc: "d b a e c" },
        updated_at: { asc: "b a d c e", desc: "c e a d b" },
        status: { asc: "a e b c d", desc: "d b c e a" },
      };
      for (const [sortBy, orders] of Object.entries(expected) as Array<[ThreadSearch["sortBy"], Record<ThreadSearch["sortOrder"], string>]>) {
        for (const [sortOrder, order] of Object.entries(orders) as Array<[ThreadSearch["sortOrder"], string]>) {
          const got = idsOf(await store.searchThreads(ALICE, page({ sortBy, sortOrder })));
          assert.deepEqual(got, order.split(" ").map((s) => `t-${s}`), `${sortBy} ${sortOrder}`);
        }
      }
    });

    test("thread ids sort by code point on every backend (not by locale, not by UTF-16 unit)", async () => {
      const store = await records();
      for (const id of ["a", "B", "\uff5e", "😀", "é"]) await store.createThread(thread(id));
      assert.deepEqual(idsOf(await store.searchThreads(ALICE, page())), ["B", "a", "é", "\uff5e", "😀"]);
      assert.deepEqual(idsOf(await store.searchThreads(ALICE, page({ sortOrder: "desc" }))), ["😀", "\uff5e", "é", "a", "B"]);
    });

    test("pages of tied rows never overlap and cover every thread once", async () => {
      const store = await records();
      const all: string[] = [];
      for (let i = 0; i < 23; i++) {
        const id = `p-${String((i * 7) % 23).padStart(2, "0")}`;
        all.push(id);
        await store.createThread(thread(id, { createdAt: 1_000 + (i % 3) }));
        await store.updateThread(ALICE, id, { status: i % 2 ? "busy" : "idle", now: 5_000 });
      }
      for (const sortBy of ["updated_at", "created_at", "status", "thread_id"] as const) {
        for (const sortOrder of ["asc", "desc"] as const) {
          const whole = idsOf(await store.searchThreads(ALICE, page({ sortBy, sortOrder })));
          const seen: string[] = [];
          for (let offset = 0; offset < 30; offset += 4) {
            seen.push(...idsOf(await store.searchThreads(ALICE, page({ sortBy, sortOrder, offset, limit: 4 }))));
          }
          assert.deepEqual(seen, whole, `${sortBy} ${sortOrder}: the pages are the whole list in order`);
          assert.deepEqual([...seen].sort(), [...all].sort(), `${sortBy} ${sortOrder}: each once`);
        }
      }
      assert.deepEqual(await store.searchThreads(ALICE, page({ offset: 23 })), []);
      assert.equal((await store.searchThreads(ALICE, page({ limit: 0 }))).length, 0);
      assert.equal(await store.countThreads(ALICE, {}), 23);
    });

    test("runs: put (and replace), status, get, newest first with a status filter and paging, delete", async () => {
      const store = await records();
      await store.createThread(thread("t"));
      await store.createThread(thread("other"));
      await store.putRun(run("t", "r1", { createdAt: 100, updatedAt: 100 }));
      await store.putRun(run("t", "r2", { createdAt: 200, updatedAt: 200, status: "success" }));
      await store.putRun(run("t", "r4", { createdAt: 300, updatedAt: 300 }));
      await store.putRun(run("t", "r3", { createdAt: 300, updatedAt: 300, status: "success" }));
      await store.putRun(run("other", "r9", { createdAt: 999, updatedAt: 999 }));

      const r1 = run("t", "r1", { createdAt: 100, updatedAt: 100, metadata: { m: [1, { n: null }] } });
      await store.putRun(r1);
      assert.deepEqual(await store.getRun(ALICE, "t", "r1"), r1, "a second put replaces the record");
      assert.equal(await store.getRun(ALICE, "other", "r1"), undefined, "a run belongs to its thread");
      await store.updateThread(ALICE, "t", { metadata: { team: "a" }, agentId: "chatbot-agent", status: "busy", ttlMs: 60_000, now: 150 });
      assert.deepEqual(
        await store.getRunWithThread(ALICE, "t", "r1"),
        { run: r1, thread: await store.getThread(ALICE, "t") },
        "the run and its thread, read together, are what each reads alone",
      );
      assert.equal(await store.getRunWithThread(ALICE, "other", "r1"), undefined);
      assert.equal(await store.getRunWithThread(ALICE, "t", "nope"), undefined);

      assert.deepEqual(runIdsOf(await store.listRuns(ALICE, "t", { offset: 0, limit: 10 })), ["r3", "r4", "r2", "r1"]);
      assert.deepEqual(runIdsOf(await store.listRuns(ALICE, "t", { offset: 1, limit: 2 })), ["r4", "r2"]);
      assert.deepEqual(runIdsOf(await store.listRuns(ALICE, "t", { offset: 4, limit: 2 })), []);
      assert.deepEqual(runIdsOf(await store.listRuns(ALICE, "t", { offset: 0, limit: 10, status: "success" })), ["r3", "r2"]);
      assert.deepEqual(runIdsOf(await store.listRuns(ALICE, "t", { offset: 1, limit: 10, status: "success" })), ["r2"]);
      assert.deepEqual(runIdsOf(await store.listRuns(ALICE, "t", { offset: 0, limit: 10, status: "timeout" })), []);

      const running = await store.setRunStatus(ALICE, "t", "r4", "running", 400);
      assert.deepEqual(running, run("t", "r4", { createdAt: 300, updatedAt: 400, status: "running" }));
      assert.deepEqual(await store.getRun(ALICE, "t", "r4"), running);
      assert.equal(await store.setRunStatus(ALICE, "t", "nope", "error", 400), undefined);

      assert.equal(await store.deleteRun(ALICE, "t", "r4"), true);
      assert.equal(await store.deleteRun(ALICE, "t", "r4"), false);
      assert.equal(await store.getRun(ALICE, "t", "r4"), undefined);
      assert.deepEqual(runIdsOf(await store.listRuns(ALICE, "t", { offset: 0, limit: 10 })), ["r3", "r2", "r1"]);
    });

    test("expired threads: their own ttl after their last update, else the default; least recently updated first; an update renews", async () => {
      const store = await records();
      await store.createThread(thread("own-short", { createdAt: 1_000, ttlMs: 500 }));
      await store.createThread(thread("own-long", { createdAt: 1_000, ttlMs: 10_000 }));
      await store.createThread(thread("default", { createdAt: 2_000 }));
      await store.createThread(thread("fresh", { createdAt: 9_000, userId: BOB }));
      assert.deepEqual(idsOf(await store.expiredThreads(5_000, 2_000, 0, 10)), ["own-short", "default"]);
      assert.deepEqual(idsOf(await store.expiredThreads(5_000, null, 0, 10)), ["own-short"], "no default: only threads with their own");
      assert.deepEqual(idsOf(await store.expiredThreads(5_000, 2_000, 0, 1)), ["own-short"]);
      await store.updateThread(ALICE, "own-short", { now: 4_800 });
      assert.deepEqual(idsOf(await store.expiredThreads(5_000, 2_000, 0, 10)), ["default"], "an update renews the ttl");
      const renewed = await store.updateThread(ALICE, "default", { now: 5_000, ttlMs: 60_000 });
      assert.equal(renewed?.ttlMs, 60_000);
      assert.deepEqual(idsOf(await store.expiredThreads(20_000, 2_000, 0, 10)), ["own-long", "own-short", "fresh"], "every user's, oldest first");
      assert.deepEqual(idsOf(await store.expiredThreads(20_000, 2_000, 4_800, 10)), ["own-short", "fresh"], "from a place: last updated at or after it");
    });

    test("a run's base is noted at its first start and kept when it starts again (a rollback goes back to it)", async () => {
      const store = await records();
      await store.createThread(thread("t"));
      await store.putRun(run("t", "r"));
      const first = { checkpointId: "1f0-first", writes: [["task-a", "__interrupt__"]] as const };
      assert.deepEqual((await store.setRunStatus(ALICE, "t", "r", "running", 2_000, first))?.base, first);
      const again = await store.setRunStatus(ALICE, "t", "r", "running", 3_000, { checkpointId: "1f0-later", writes: [] });
      assert.deepEqual(again?.base, first, "a run claimed again keeps the base of its first start");
      assert.deepEqual((await store.setRunStatus(ALICE, "t", "r", "success", 4_000))?.base, first);
      const empty = { checkpointId: null, writes: [] };
      await store.putRun(run("t", "fresh", { status: "running", base: empty }));
      assert.deepEqual((await store.getRun(ALICE, "t", "fresh"))?.base, empty);
    });

    test("a run starts and ends with its thread's status in one write each: a new record, or one accepted earlier", async () => {
      const store = await records();
      await store.createThread(thread("t", { metadata: { keep: 1 } }));
      await store.createThread(thread("t", { userId: BOB }));
      const base = { checkpointId: "1f0-base", writes: [["task-a", "__interrupt__"]] as const };
      const fresh = run("t", "fresh", { status: "running", createdAt: 2_000, updatedAt: 2_000, base });
      await store.runStarted(fresh, false);
      assert.deepEqual(await store.getRun(ALICE, "t", "fresh"), fresh, "a new run's record is written whole");
      const busy = await store.getThread(ALICE, "t");
      assert.equal(busy?.status, "busy");
      assert.equal(busy?.updatedAt, 2_000);
      assert.deepEqual(busy?.metadata, { keep: 1 }, "the thread's metadata is left as it was");
      assert.equal((await store.getThread(BOB, "t"))?.status, "idle", "another user's thread of the same id is untouched");

      await store.runEnded(ALICE, "t", "fresh", "interrupted", "interrupted", 3_000);
      assert.deepEqual(await store.getRun(ALICE, "t", "fresh"), { ...fresh, status: "interrupted", updatedAt: 3_000 }, "ending keeps the base");
      assert.equal((await store.getThread(ALICE, "t"))?.status, "interrupted");
      assert.equal((await store.getThread(ALICE, "t"))?.updatedAt, 3_000);

      // A background run's record exists since it was accepted: starting it sets its status, time and first base only.
      const accepted = run("t", "queued", { status: "pending", kwargs: { input: { x: 1 } }, createdAt: 4_000, updatedAt: 4_000 });
      await store.putRun(accepted);
      await store.runStarted(run("t", "queued", { status: "running", kwargs: {}, createdAt: 5_000, updatedAt: 5_000, base }), true);
      assert.deepEqual(await store.getRun(ALICE, "t", "queued"), { ...accepted, status: "running", updatedAt: 5_000, base });
      await store.runStarted(run("t", "queued", { status: "running", updatedAt: 6_000, base: { checkpointId: "1f0-later", writes: [] } }), true);
      assert.deepEqual((await store.getRun(ALICE, "t", "queued"))?.base, base, "started again, it keeps the base of its first start");
      assert.equal((await store.getThread(ALICE, "t"))?.status, "busy");

      await store.runStarted(run("t", "never-accepted", { status: "running" }), true);
      assert.equal(await store.getRun(ALICE, "t", "never-accepted"), undefined, "an accepted run with no record is not invented");
      await store.runEnded(ALICE, "t", "nope", "success", "idle", 7_000);
      assert.equal(await store.getRun(ALICE, "t", "nope"), undefined);
      assert.equal((await store.getThread(BOB, "t"))?.status, "idle");
    });

    test("a run handed back is pending again, unless it reached a final status meanwhile; another user's is out of reach", async () => {
      const store = await records();
      await store.createThread(thread("handed"));
      await store.putRun(run("handed", "executing", { status: "running" }));
      await store.putRun(run("handed", "ended", { status: "success", updatedAt: 2_000 }));
      await store.updateThread(ALICE, "handed", { status: "busy", now: 2_500 });
      assert.equal(await store.runHandedBack(ALICE, "handed", "executing", 3_000), true);
      assert.deepEqual(await store.getRun(ALICE, "handed", "executing"), run("handed", "executing", { status: "pending", updatedAt: 3_000 }));
      const idle = await store.getThread(ALICE, "handed");
      assert.deepEqual([idle?.status, idle?.updatedAt], ["idle", 3_000], "its thread is idle again");
      await store.updateThread(ALICE, "handed", { status: "busy", now: 3_500 });
      // One that never started (pending) did not make the thread busy: the thread stays as it is.
      assert.equal(await store.runHandedBack(ALICE, "handed", "executing", 3_600), true);
      assert.equal((await store.getThread(ALICE, "handed"))?.status, "busy", "another run's busy stays");
      for (const status of ["success", "error", "timeout", "interrupted"] as const) {
        await store.setRunStatus(ALICE, "handed", "ended", status, 2_000);
        assert.equal(await store.runHandedBack(ALICE, "handed", "ended", 4_000), false, status);
        assert.equal((await store.getRun(ALICE, "handed", "ended"))?.status, status);
        assert.equal((await store.getRun(ALICE, "handed", "ended"))?.updatedAt, 2_000);
        assert.equal((await store.getThread(ALICE, "handed"))?.status, "busy", "nothing changes");
      }
      assert.equal(await store.runHandedBack(BOB, "handed", "executing", 5_000), false);
      assert.equal(await store.runHandedBack(ALICE, "handed", "missing", 5_000), false);
      assert.equal((await store.getRun(ALICE, "handed", "executing"))?.updatedAt, 3_600);
    });

    test("a run's kwargs come back as given, a \\u0000 in the input included", async () => {
      const store = await records();
      await store.createThread(thread("t"));
      const kwargs = { input: { messages: [{ type: "human", content: "nul \u0000 here, 'quotes' \"too\" 😀" }] }, config: { configurable: { b: 2, a: 1 } } };
      await store.putRun(run("t", "r", { kwargs }));
      assert.deepEqual((await store.getRun(ALICE, "t", "r"))?.kwargs, kwargs);
    });

    test("deleting a thread deletes its runs' records, and only its own", async () => {
      const made = await make();
      opened.push(made);
      const store = made.records;
      await store.createThread(thread("gone"));
      await store.createThread(thread("kept"));
      await store.createThread(thread("gone", { userId: BOB }));
      await store.putRun(run("gone", "r1"));
      await store.putRun(run("gone", "r2"));
      await store.putRun(run("kept", "r1"));
      await store.putRun(run("gone", "r1", { userId: BOB }));

      assert.equal(await store.deleteThread(ALICE, "gone"), true);
      assert.equal(await store.deleteThread(ALICE, "gone"), false);
      assert.equal(await store.getThread(ALICE, "gone"), undefined);
      assert.deepEqual(await store.listRuns(ALICE, "gone", { offset: 0, limit: 10 }), []);
      assert.equal(await store.getRun(ALICE, "gone", "r1"), undefined);
      assert.equal((await store.getRun(ALICE, "kept", "r1"))?.runId, "r1");
      assert.equal((await store.getRun(BOB, "gone", "r1"))?.runId, "r1");
      assert.ok(await store.getThread(BOB, "gone"));
      if (name !== "memory") assert.equal(await made.runRows(), 2);

      const fresh = await store.createThread(thread("gone", { createdAt: 9_000 }));
      assert.equal(fresh?.createdAt, 9_000, "the id can be used again");
      assert.deepEqual(await store.listRuns(ALICE, "gone", { offset: 0, limit: 10 }), [], "with no runs of the old thread");
    });

    test("hostile ids and metadata keys are data, never SQL or a JSON path", async () => {
      const store = await records();
      const metadata: JsonObject = Object.fromEntries([...HOSTILE.map((key, i) => [key, i] as const), ["__proto__", { polluted: true }] as const]);
      for (const id of HOSTILE) {
        assert.ok(await store.createThread(thread(id, { metadata })), id);
        await store.putRun(run(id, id, { metadata }));
      }
      const user = HOSTILE[0]!;
      assert.ok(await store.createThread(thread("plain", { userId: user })));

      for (const id of HOSTILE) {
        const got = await store.getThread(ALICE, id);
        assert.equal(got?.threadId, id);
        assert.deepEqual(got?.metadata, metadata);
        assert.equal(Object.getPrototypeOf(got?.metadata), Object.prototype, "__proto__ is a key, not a prototype");
        assert.deepEqual(idsOf(await store.searchThreads(ALICE, page({ ids: [id] }))), [id]);
        assert.equal((await store.getRun(ALICE, id, id))?.runId, id);
        assert.deepEqual(runIdsOf(await store.listRuns(ALICE, id, { offset: 0, limit: 10 })), [id]);
      }
      for (const [i, key] of HOSTILE.entries()) {
        assert.equal((await store.searchThreads(ALICE, page({ metadata: { [key]: i } }))).length, HOSTILE.length, key);
        assert.equal(await store.countThreads(ALICE, { metadata: { [key]: i + 1 } }), 0, key);
      }
      assert.equal(await store.countThreads(ALICE, { metadata: { __proto__: { polluted: true } } as JsonObject }), HOSTILE.length, "no filter at all");
      assert.equal(await store.countThreads(ALICE, { metadata: JSON.parse('{"__proto__": {"polluted": true}}') as JsonObject }), HOSTILE.length);
      assert.equal(await store.countThreads(ALICE, { metadata: JSON.parse('{"__proto__": {}}') as JsonObject }), 0);

      const updated = await store.updateThread(ALICE, HOSTILE[0]!, { metadata: { [HOSTILE[1]!]: null, "'": "'" }, now: 2_000 });
      assert.equal(updated?.metadata[HOSTILE[1]!], null);
      assert.equal(updated?.metadata["'"], "'");
      assert.equal(await store.deleteRun(ALICE, HOSTILE[2]!, HOSTILE[2]!), true);
      assert.equal(await store.deleteThread(ALICE, HOSTILE[3]!), true);
      assert.equal(await store.countThreads(ALICE, {}), HOSTILE.length - 1);
      assert.deepEqual(idsOf(await store.searchThreads(user, page())), ["plain"]);
    });
  });
}

test("serverdb: text columns sort by code point (collation \"C\") whatever the database's default collation", async () => {
  const made = await postgres();
  try {
    const schema = (made.records as unknown as { schema: string }).schema;
    await withClient(async (client) => {
      const { rows } = await client.query<{ table_name: string; column_name: string; collation_name: string | null }>(
        `SELECT table_name, column_name, collation_name FROM information_schema.columns
WHERE table_schema = $1 AND data_type = 'text' ORDER BY table_name, column_name`,
        [schema],
      );
      assert.ok(rows.length >= 10);
      for (const row of rows) assert.equal(row.collation_name, "C", `${row.table_name}.${row.column_name}`);
    });
  } finally {
    await made.close();
  }
});

test("filedb: a run table of the release before rollback gets its base column; its records read with none", async () => {
  const { file, remove } = sqliteFile();
  const db = new Database(file);
  try {
    db.exec(`CREATE TABLE agenthost_platform_runs (user_id TEXT NOT NULL, thread_id TEXT NOT NULL, run_id TEXT NOT NULL, agent_id TEXT NOT NULL,
  status TEXT NOT NULL, metadata TEXT NOT NULL, kwargs TEXT NOT NULL, multitask_strategy TEXT NOT NULL, created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL, PRIMARY KEY (user_id, thread_id, run_id))`);
    db.prepare("INSERT INTO agenthost_platform_runs VALUES ('alice', 't', 'old', 'agent-a', 'success', '{}', '{}', 'reject', 1, 2)").run();
    const store = new SqlitePlatformRecords(db);
    new SqlitePlatformRecords(db); // a second worker's setup changes nothing
    assert.equal((await store.getRun(ALICE, "t", "old"))?.base, null);
    const base = { checkpointId: "1f0", writes: [] };
    assert.deepEqual((await store.setRunStatus(ALICE, "t", "old", "running", 3, base))?.base, base);
  } finally {
    db.close();
    remove();
  }
});

describe("Platform records behind the database gate", () => {
  test("a database not set up yet answers DatabaseUnavailableError to every call", async () => {
    const records = new GuardedPlatformRecords(new DatabaseGate("serverdb", new ReadableSerde()));
    const calls: Array<() => Promise<unknown>> = [
      () => records.createThread(thread("t")),
      () => records.getThread(ALICE, "t"),
      () => records.updateThread(ALICE, "t", { now: 1 }),
      () => records.deleteThread(ALICE, "t"),
      () => records.searchThreads(ALICE, page()),
      () => records.countThreads(ALICE, {}),
      () => records.putRun(run("t", "r")),
      () => records.setRunStatus(ALICE, "t", "r", "error", 1),
      () => records.getRun(ALICE, "t", "r"),
      () => records.listRuns(ALICE, "t", { offset: 0, limit: 1 }),
      () => records.deleteRun(ALICE, "t", "r"),
    ];
    for (const call of calls) await assert.rejects(call(), DatabaseUnavailableError);
  });

  test("SQLITE_BUSY: a write while another connection holds the lock answers DatabaseUnavailableError; reads go on", async () => {
    const { file, remove } = sqliteFile();
    const db = new Database(file, { timeout: 0 });
    db.pragma("journal_mode = WAL");
    const gate = new DatabaseGate("filedb", new ReadableSerde());
    gate.open({ platform: new SqlitePlatformRecords(db) } as unknown as OpenDatabase);
    const records = new GuardedPlatformRecords(gate);
    const other = new Database(file);
    try {
      await records.createThread(thread("t"));
      other.prepare("BEGIN IMMEDIATE").run();
      await assert.rejects(records.createThread(thread("u")), DatabaseUnavailableError);
      await assert.rejects(records.updateThread(ALICE, "t", { status: "busy", now: 2 }), DatabaseUnavailableError);
      await assert.rejects(records.deleteThread(ALICE, "t"), DatabaseUnavailableError);
      await assert.rejects(records.putRun(run("t", "r")), DatabaseUnavailableError);
      assert.equal((await records.getThread(ALICE, "t"))?.status, "idle");
      other.prepare("COMMIT").run();
      assert.equal((await records.updateThread(ALICE, "t", { status: "busy", now: 2 }))?.status, "busy");
    } finally {
      other.close();
      db.close();
      remove();
    }
  });
});
