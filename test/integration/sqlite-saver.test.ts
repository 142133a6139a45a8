import { after, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type BetterSqlite3 from "better-sqlite3";
import Database from "../../src/checkpoints/sqlite-driver.ts";
import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { ownerConfigurable } from "../../src/contract/conversation-owner-key.ts";
import { MessageStoreSaver } from "../../src/checkpoints/message-store.ts";
import { SqliteMessageRows } from "../../src/checkpoints/message-rows.ts";
import { SqliteFileSaver, sqliteFileSavers } from "../../src/checkpoints/sqlite-saver.ts";
import { SqliteThreadIndex } from "../../src/checkpoints/thread-index-sql.ts";
import { converseWithInterrupt } from "../helpers/saver-conversation.ts";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agenthost-sqlite-saver-"));
const dbs: BetterSqlite3.Database[] = [];
after(() => {
  for (const db of dbs) db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function open(name: string): BetterSqlite3.Database {
  const db = new Database(path.join(dir, name));
  db.pragma("journal_mode = WAL");
  dbs.push(db);
  return db;
}

/** The stored rows, without what differs by design between two runs (checkpoint ids, times, and interrupt ids derived from them). */
function rowsOf(db: BetterSqlite3.Database) {
  const checkpoints = db.prepare("SELECT thread_id, checkpoint_ns, parent_checkpoint_id IS NULL AS root, type, checkpoint, metadata FROM checkpoints ORDER BY checkpoint_id").all() as Array<
    Record<string, unknown> & { checkpoint: Buffer; metadata: Buffer }
  >;
  const writes = db.prepare("SELECT thread_id, checkpoint_ns, idx, channel, type, value FROM writes ORDER BY checkpoint_id, task_id, idx").all();
  return {
    checkpoints: checkpoints.map(({ checkpoint, metadata, ...row }) => {
      const { id: _id, ts: _ts, ...stable } = JSON.parse(checkpoint.toString()) as Record<string, unknown>;
      return { ...row, checkpoint: stable, metadata: JSON.parse(metadata.toString()) as unknown };
    }),
    writes: writes.map((w) => ({ ...(w as Record<string, unknown>), value: String((w as { value: Buffer }).value).replace(/"id":"[0-9a-f]{32}"/g, '"id":"…"') })),
  };
}

test("the service's SQLite saver stores what LangGraph's SqliteSaver stores, and reads back the same history", async () => {
  const libraryDb = open("library.sqlite");
  const serviceDb = open("service.sqlite");
  const library = new SqliteSaver(libraryDb, new JsonPlusSerializer());
  const service = new SqliteFileSaver(serviceDb, new JsonPlusSerializer(), new SqliteMessageRows(serviceDb), new SqliteThreadIndex(serviceDb));

  const fromLibrary = await (await converseWithInterrupt(library)).history();
  const fromService = await (await converseWithInterrupt(service)).history();
  assert.deepEqual(fromService, fromLibrary, "the same states, history and interrupts read back");
  const [libraryRows, serviceRows] = [rowsOf(libraryDb), rowsOf(serviceDb)];
  assert.ok(libraryRows.checkpoints.length > 5 && libraryRows.writes.length > 5);
  assert.deepEqual(serviceRows, libraryRows, "the same checkpoint and write rows");
});

test("each SqliteSaver refusal holds: no thread id, no checkpoint id for writes", async () => {
  const db = open("refusals.sqlite");
  const saver = new SqliteFileSaver(db, new JsonPlusSerializer(), new SqliteMessageRows(db), new SqliteThreadIndex(db));
  const checkpoint = { v: 4, id: "c1", ts: "", channel_values: {}, channel_versions: {}, versions_seen: {} };
  await assert.rejects(saver.put({ configurable: {} }, checkpoint, { source: "input", step: -1, parents: {} }), /thread_id/);
  await assert.rejects(saver.putWrites({ configurable: { thread_id: "t" } }, [["messages", []]], "task"), /checkpoint_id/);
});

test("sqliteSaverWrites off: LangGraph's own SqliteSaver under the message store stores the same checkpoints, message rows and list entry", async () => {
  const stored = async (shortcut: boolean) => {
    const db = open(`store-${shortcut}.sqlite`);
    const rows = new SqliteMessageRows(db);
    const threads = new SqliteThreadIndex(db);
    const { saver, writer } = sqliteFileSavers(db, new JsonPlusSerializer(), rows, threads, shortcut);
    assert.equal(saver instanceof SqliteFileSaver, shortcut, shortcut ? "the service's saver" : "the library's saver");
    assert.ok(saver instanceof SqliteSaver);
    assert.equal((writer as unknown) === saver, shortcut, "the library's saver is not the message store's writer");
    const store = new MessageStoreSaver(saver, rows, 1_000, threads, writer);
    const history = await (await converseWithInterrupt(store, ownerConfigurable("u", "agent", "public-t"))).history();
    const messages = db.prepare("SELECT thread_id, message_key, message FROM agenthost_messages ORDER BY message_key").all();
    const listed = db.prepare("SELECT thread_id, user_id, agent_id, public_thread_id, title, message_count FROM agenthost_threads").all();
    return { history, rows: rowsOf(db), messages, listed };
  };
  const library = await stored(false);
  const service = await stored(true);
  assert.ok(library.messages.length >= 3 && library.listed.length === 1);
  assert.deepEqual(service, library);
});

test("a checkpoint's row holds the values its put changed and those its parent holds at the same version, whole, as LangGraph's SqliteSaver reads them", async () => {
  const db = open("changed-values.sqlite");
  const serde = new JsonPlusSerializer();
  const saver = new SqliteFileSaver(db, serde, new SqliteMessageRows(db), new SqliteThreadIndex(db));
  const base = { v: 4, ts: new Date().toISOString(), versions_seen: {} };
  const metadata = { source: "loop" as const, step: 0, parents: {} };
  const config = (checkpoint_id?: string) => ({ configurable: { thread_id: "t", checkpoint_ns: "", ...(checkpoint_id ? { checkpoint_id } : {}) } });
  const values = { a: "a1", b: "b1" };

  // No parent: only what the put names as changed is stored.
  await saver.put(config(), { ...base, id: "1", channel_values: values, channel_versions: { a: 1, b: 1 } }, metadata, { a: 1 });
  // Parent "1" holds a at 1, not b: a is carried, b (named by nobody) is not.
  await saver.put(config("1"), { ...base, id: "2", channel_values: values, channel_versions: { a: 1, b: 1 } }, metadata, {});
  // Parent "2" holds a at 1; this checkpoint says a is at 2 without naming it as changed: not stored.
  await saver.put(config("2"), { ...base, id: "3", channel_values: { a: "a2", c: "c1" }, channel_versions: { a: 2, c: 1 } }, metadata, { c: 1 });
  // A fresh saver on the same file (no remembered parent) reads the parent's row to carry from it.
  const cold = new SqliteFileSaver(db, serde, new SqliteMessageRows(db), new SqliteThreadIndex(db));
  await cold.put(config("3"), { ...base, id: "4", channel_values: { c: "c1" }, channel_versions: { a: 2, c: 1 } }, metadata, {});

  const library = new SqliteSaver(db, serde);
  const read = async (id: string) => (await library.getTuple(config(id)))?.checkpoint.channel_values;
  assert.deepEqual(await read("1"), { a: "a1" });
  assert.deepEqual(await read("2"), { a: "a1" });
  assert.deepEqual(await read("3"), { c: "c1" });
  assert.deepEqual(await read("4"), { c: "c1" }, "carried from a parent this saver did not write, and stored whole");
});
