import { after, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type BetterSqlite3 from "better-sqlite3";
import Database from "../../src/checkpoints/sqlite-driver.ts";
import { SqliteCommitGroup } from "../../src/checkpoints/sqlite-commit-group.ts";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agenthost-commit-group-"));
const dbs: BetterSqlite3.Database[] = [];
after(() => {
  for (const db of dbs) if (db.open) db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A file with a table `t (k PRIMARY KEY, v)`, in WAL mode, never checkpointed on its own; and a second connection to read it. */
function openFile(name: string, timeout = 5_000): { db: BetterSqlite3.Database; other: BetterSqlite3.Database; group: SqliteCommitGroup } {
  const file = path.join(dir, name);
  const db = new Database(file, { timeout });
  db.pragma("journal_mode = WAL");
  db.pragma("wal_autocheckpoint = 0");
  db.exec("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)");
  const other = new Database(file, { timeout });
  dbs.push(db, other);
  return { db, other, group: SqliteCommitGroup.of(db) };
}

const insert = (db: BetterSqlite3.Database, k: string, v = "v") => () => db.prepare("INSERT INTO t (k, v) VALUES (?, ?)").run(k, v).changes;
const keys = (db: BetterSqlite3.Database) => (db.prepare("SELECT k FROM t ORDER BY k").pluck().all() as string[]).join(",");
/** Frames in the WAL file (each commit appends the pages it changed). */
const walFrames = (db: BetterSqlite3.Database) => (db.pragma("wal_checkpoint(NOOP)") as Array<{ log: number }>)[0]!.log;

test("writes asked in one tick share one commit, in order, each resolving with its own result once committed", async () => {
  const { db, other, group } = openFile("one-tick.sqlite");
  const framesBefore = walFrames(db);
  const seen: string[] = [];
  const writes = ["a", "b", "c", "d", "e", "f", "g", "h"].map((k) =>
    group
      .commit(() => {
        // Every member runs before the commit: the other connection sees none of the group yet.
        assert.equal(keys(other), "");
        return insert(db, k)();
      })
      .then((changes) => {
        seen.push(`${k}:${keys(other).split(",").length}`);
        return changes;
      }),
  );
  assert.equal(keys(db), "", "nothing is written before the tick ends");
  assert.deepEqual(await Promise.all(writes), [1, 1, 1, 1, 1, 1, 1, 1]);
  assert.deepEqual(seen, ["a:8", "b:8", "c:8", "d:8", "e:8", "f:8", "g:8", "h:8"], "each resolves after the whole group is visible to another connection");
  const grouped = walFrames(db) - framesBefore;

  // The same eight writes one after the other, each awaited: eight commits, each writing the table's page again.
  const framesBetween = walFrames(db);
  for (const k of ["i", "j", "k", "l", "m", "n", "o", "p"]) await group.commit(insert(db, k));
  const oneByOne = walFrames(db) - framesBetween;
  assert.ok(grouped * 4 <= oneByOne, `one commit wrote ${grouped} WAL frames, eight commits ${oneByOne}`);
  assert.equal(keys(other).split(",").length, 16);
});

test("writes asked by the promise continuations of the same tick join its commit; a write asked once the commit is done makes the next", async () => {
  const { db, other, group } = openFile("continuations.sqlite");
  const framesBefore = walFrames(db);
  const first = group.commit(insert(db, "a"));
  let seenByB: string | undefined;
  const second = Promise.resolve()
    .then(() => Promise.resolve())
    .then(() =>
      group.commit(() => {
        seenByB = keys(other);
        return insert(db, "b")();
      }),
    );
  await Promise.all([first, second]);
  assert.equal(seenByB, "", "b ran in a's transaction, before a was committed");
  const oneCommit = walFrames(db) - framesBefore;
  assert.equal(keys(other), "a,b");
  await group.commit(insert(db, "c"));
  assert.ok(walFrames(db) - framesBefore >= oneCommit * 2, "the later write was a commit of its own");
});

test("a write that throws is undone alone: the others asked with it are kept", async () => {
  const { db, other, group } = openFile("one-fails.sqlite");
  const results = await Promise.allSettled([
    group.commit(insert(db, "a")),
    group.commit(() => {
      insert(db, "b")();
      insert(db, "a")(); // the key is taken: a constraint error after this member wrote "b"
    }),
    group.commit(insert(db, "c")),
  ]);
  assert.deepEqual(
    results.map((r) => r.status),
    ["fulfilled", "rejected", "fulfilled"],
  );
  assert.match(String((results[1] as PromiseRejectedResult).reason), /UNIQUE constraint failed/);
  assert.equal(keys(other), "a,c", "the failed member's first statement was undone with it");
  assert.equal(db.inTransaction, false);
});

test("a commit that cannot begin (another connection holds the write lock past the busy timeout) refuses every write of it; the next ones go through", async () => {
  const { db, other, group } = openFile("busy.sqlite", 50);
  other.exec("BEGIN IMMEDIATE");
  const refused = await Promise.allSettled([group.commit(insert(db, "a")), group.commit(insert(db, "b"))]);
  assert.deepEqual(
    refused.map((r) => r.status === "rejected" && (r.reason as { code?: string }).code),
    ["SQLITE_BUSY", "SQLITE_BUSY"],
  );
  other.exec("COMMIT");
  assert.equal(await group.commit(insert(db, "c")), 1);
  assert.equal(keys(other), "c");
});

test("whatever SQLite does with a full database, a write resolved is stored and a write refused is not", async () => {
  const { db, other, group } = openFile("full.sqlite");
  const pageSize = db.pragma("page_size", { simple: true }) as number;
  const pages = db.pragma("page_count", { simple: true }) as number;
  db.pragma(`max_page_count = ${pages + 3}`);
  const big = "x".repeat(pageSize * 6);
  const asked = ["a", "b", "full", "c", "d"].map((k) => ({ k, done: group.commit(insert(db, k, k === "full" ? big : "v")) }));
  const settled = await Promise.allSettled(asked.map((a) => a.done));
  const stored = new Set(keys(other).split(",").filter(Boolean));
  assert.equal(settled[2]!.status, "rejected");
  assert.equal(((settled[2] as PromiseRejectedResult).reason as { code?: string }).code, "SQLITE_FULL");
  for (const [i, { k }] of asked.entries()) {
    assert.equal(stored.has(k), settled[i]!.status === "fulfilled", `${k}: ${settled[i]!.status}, ${stored.has(k) ? "stored" : "not stored"}`);
  }
  assert.equal([...stored].sort().join(","), "a,b,c,d", "SQLite rolled the whole transaction back, and no other write went with it");
  assert.equal(db.inTransaction, false);
});

test("flush commits what waits at once (before the connection closes), and a closed connection refuses the writes asked of it", async () => {
  const { db, other, group } = openFile("close.sqlite");
  const waiting = group.commit(insert(db, "a"));
  group.flush();
  assert.equal(keys(other), "a", "committed before the tick ended");
  assert.equal(await waiting, 1);
  db.close();
  const refused = group.commit(() => 1);
  await assert.rejects(refused, /not open/);
});
