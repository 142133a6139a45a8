// The SQLite file failing under a running service: a write lock held elsewhere past
// FILEDB_BUSY_TIMEOUT (SQLITE_BUSY) and a full disk (SQLITE_FULL) answer 503 database_unavailable,
// never 500 and never a crash, and the service carries on once the file is usable again.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type BetterSqlite3 from "better-sqlite3";
import Database from "../../src/checkpoints/sqlite-driver.ts";
import type { DatabaseGate } from "../../src/checkpoints/guarded-saver.ts";
import type { MessageStoreSaver } from "../../src/checkpoints/message-store.ts";
import { WAL_AUTOCHECKPOINT_PAGES } from "../../src/checkpoints/sqlite-file.ts";
import { call, startService, type RunningService } from "../helpers/service.ts";

const AGENT = "chatbot-agent";

/** The worker's own connection to the file (the disk-full limit is set per connection). */
function serviceConnection(service: RunningService): BetterSqlite3.Database {
  const store: MessageStoreSaver = service.runtime.checkpoints.saver;
  const gate = (store.inner as unknown as { gate: DatabaseGate }).gate;
  return (gate.current().saver as unknown as { db: BetterSqlite3.Database }).db;
}

async function status(res: Response): Promise<[number, unknown]> {
  const body = (await res.json()) as { error_code?: unknown };
  return [res.status, body.error_code];
}

describe("SQLite failures under a running service", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agenthost-sqlite-fail-"));
  const file = path.join(dir, "checkpoints.sqlite");
  let service: RunningService;

  before(async () => {
    service = await startService({ MEMORY_BACKEND: "filedb", FILEDB_DB_PATH: file, FILEDB_BUSY_TIMEOUT: "0.2" });
  });
  after(async () => {
    await service?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test("the worker's connection: WAL, NORMAL sync, and a checkpoint every WAL_AUTOCHECKPOINT_PAGES pages", () => {
    const db = serviceConnection(service);
    assert.equal(db.pragma("journal_mode", { simple: true }), "wal");
    assert.equal(db.pragma("synchronous", { simple: true }), 1);
    assert.equal(db.pragma("wal_autocheckpoint", { simple: true }), WAL_AUTOCHECKPOINT_PAGES);
    assert.ok(WAL_AUTOCHECKPOINT_PAGES > 1_000, "fewer checkpoints than SQLite's default");
  });

  test("SQLITE_BUSY: writes wait FILEDB_BUSY_TIMEOUT, then answer 503; reads go on (WAL); all well after", async () => {
    assert.equal((await call(service, "POST", `/${AGENT}/invoke`, { input: { message: "first" }, thread_id: "busy" })).status, 200);
    const other = new Database(file);
    other.prepare("BEGIN IMMEDIATE").run();
    try {
      assert.deepEqual(await status(await call(service, "POST", `/${AGENT}/invoke`, { input: { message: "x" }, thread_id: "busy" })), [503, "database_unavailable"]);
      assert.deepEqual(
        await status(await call(service, "POST", `/${AGENT}/history/add_messages`, { thread_id: "busy", messages: [{ type: "human", content: "x" }] })),
        [503, "database_unavailable"],
      );
      assert.deepEqual(await status(await call(service, "DELETE", `/${AGENT}/history/clear`, { thread_id: "busy" })), [503, "database_unavailable"]);
      const read = await call(service, "GET", `/${AGENT}/history?thread_id=busy`);
      assert.equal(read.status, 200, "WAL readers are not blocked by the writer");
      assert.equal(((await read.json()) as { total: number }).total, 2);
    } finally {
      other.prepare("COMMIT").run();
      other.close();
    }
    assert.equal((await call(service, "POST", `/${AGENT}/invoke`, { input: { message: "again" }, thread_id: "busy" })).status, 200);
  });

  test("SQLITE_FULL: a full disk answers 503 database_unavailable; the stored conversation is intact", async () => {
    assert.equal((await call(service, "POST", `/${AGENT}/invoke`, { input: { message: "before" }, thread_id: "full" })).status, 200);
    const db = serviceConnection(service);
    const pages = db.pragma("page_count", { simple: true }) as number;
    db.pragma(`max_page_count = ${pages}`);
    try {
      const big = "x".repeat(200_000);
      assert.deepEqual(
        await status(await call(service, "POST", `/${AGENT}/history/add_messages`, { thread_id: "full", messages: [{ type: "human", content: big }] })),
        [503, "database_unavailable"],
      );
      assert.deepEqual(await status(await call(service, "POST", `/${AGENT}/invoke`, { input: { message: big }, thread_id: "full" })), [503, "database_unavailable"]);
    } finally {
      db.pragma("max_page_count = 1073741823");
    }
    const read = await call(service, "GET", `/${AGENT}/history?thread_id=full`);
    assert.equal(((await read.json()) as { total: number }).total, 2);
    assert.equal((await call(service, "POST", `/${AGENT}/invoke`, { input: { message: "after" }, thread_id: "full" })).status, 200);
    for (const line of service.logs) if (line.msg === "database unavailable") assert.ok(!("err" in line) && !JSON.stringify(line).includes("stack"));
    assert.ok(service.logs.some((l) => l.msg === "database unavailable" && (l.db as { code?: string }).code === "SQLITE_FULL"));
  });
});
