import { existsSync } from "node:fs";
import type BetterSqlite3 from "better-sqlite3";
import Database from "../checkpoints/sqlite-driver.ts";
import { MaintenanceRefusal } from "./refusal.ts";
import type { CheckpointStore, CheckpointTime, TableLayout } from "./store.ts";
import { IDEMPOTENCY_TABLE } from "../checkpoints/idempotency-store.ts";
import { LEGACY_INDEX_TABLES, MESSAGE_TABLE } from "../checkpoints/message-rows.ts";
import { THREAD_TABLE } from "../checkpoints/thread-index.ts";
import { createSqliteThreadTable } from "../checkpoints/thread-index-sql.ts";

/** The SqliteSaver's tables (@langchain/langgraph-checkpoint-sqlite): `writes` is missing in older files. */
export const FILEDB_LAYOUT: TableLayout = { checkpoints: "checkpoints", required: ["checkpoints"], optional: ["writes", MESSAGE_TABLE, ...LEGACY_INDEX_TABLES, THREAD_TABLE, IDEMPOTENCY_TABLE] };

/** A row of the conversation list, as threadOwners reads it. */
interface OwnerRow {
  thread_id: string;
  user_id: string;
  agent_id: string;
  public_thread_id: string;
}

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * Open the service's SQLite file. It must exist: a mistyped path must not create an empty database.
 * A dry run opens it read-only. A write transaction is BEGIN IMMEDIATE, so it waits at most
 * `busyTimeoutMs` for a writer still running and then refuses.
 */
export function openFiledbStore(path: string, options: { readonly: boolean; busyTimeoutMs?: number }): CheckpointStore {
  if (!existsSync(path)) throw new MaintenanceRefusal(`file database ${JSON.stringify(path)} does not exist`);
  let db: BetterSqlite3.Database;
  try {
    db = new Database(path, { fileMustExist: true, readonly: options.readonly, timeout: options.busyTimeoutMs ?? 5000 });
  } catch (error) {
    throw new MaintenanceRefusal(`cannot open file database ${JSON.stringify(path)}: ${(error as Error).message}`);
  }

  const store: CheckpointStore = {
    backend: "filedb",
    layout: FILEDB_LAYOUT,
    describe: { filedb_path: path },

    async transaction(mode, fn) {
      db.exec(mode === "write" ? "BEGIN IMMEDIATE" : "BEGIN");
      try {
        const result = await fn();
        db.exec(mode === "write" ? "COMMIT" : "ROLLBACK");
        return result;
      } catch (error) {
        if (db.inTransaction) db.exec("ROLLBACK");
        throw error;
      }
    },

    async existingTables(names) {
      const rows = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .all() as Array<{ name: string }>;
      const present = new Set(rows.map((r) => r.name));
      return new Set(names.filter((n) => present.has(n)));
    },

    async lockForWrite() {
      // BEGIN IMMEDIATE already holds the database's write lock.
    },

    async threadIds(table) {
      const rows = db.prepare(`SELECT DISTINCT thread_id FROM ${quote(table)}`).pluck().all() as string[];
      return rows;
    },

    async countRows(table, threadIds) {
      const stmt = db.prepare(`SELECT count(*) FROM ${quote(table)} WHERE thread_id = ?`).pluck();
      const counts = new Map<string, number>();
      for (const id of threadIds) {
        const n = stmt.get(id) as number;
        if (n > 0) counts.set(id, n);
      }
      return counts;
    },

    async canonicalCheckpointTimes() {
      // The saver stores the checkpoint as its serializer's bytes; type 'json' is JSON text with `ts`.
      const rows = db
        .prepare(
          `SELECT thread_id, checkpoint_ns, checkpoint_id,
                  CASE WHEN type = 'json' AND json_valid(CAST(checkpoint AS TEXT))
                       THEN json_extract(CAST(checkpoint AS TEXT), '$.ts') END AS ts
             FROM ${quote(FILEDB_LAYOUT.checkpoints)}
            WHERE substr(thread_id, 1, 7) = 'lat:v1:'`,
        )
        .all() as Array<{ thread_id: string; checkpoint_ns: string; checkpoint_id: string; ts: unknown }>;
      return rows.map(
        (r): CheckpointTime => ({ threadId: r.thread_id, checkpointNs: r.checkpoint_ns, checkpointId: r.checkpoint_id, ts: r.ts }),
      );
    },

    async checkpointTimesOf(threadId) {
      return db
        .prepare(
          `SELECT CASE WHEN type = 'json' AND json_valid(CAST(checkpoint AS TEXT))
                       THEN json_extract(CAST(checkpoint AS TEXT), '$.ts') END
             FROM ${quote(FILEDB_LAYOUT.checkpoints)} WHERE thread_id = ?`,
        )
        .pluck()
        .all(threadId);
    },

    async listThread(threadId, owner, createdAt, updatedAt) {
      createSqliteThreadTable(db);
      db.prepare(
        `INSERT INTO ${THREAD_TABLE} (thread_id, user_id, agent_id, public_thread_id, title, message_count, created_at, updated_at)
         VALUES (?, ?, ?, ?, NULL, NULL, ?, ?)
         ON CONFLICT (thread_id) DO UPDATE SET user_id = excluded.user_id, agent_id = excluded.agent_id, public_thread_id = excluded.public_thread_id`,
      ).run(threadId, owner.userId, owner.agentId, owner.threadId, createdAt, updatedAt);
    },

    async threadOwners() {
      const rows = db.prepare(`SELECT thread_id, user_id, agent_id, public_thread_id FROM ${THREAD_TABLE}`).all() as OwnerRow[];
      return new Map(rows.map((r) => [r.thread_id, { userId: r.user_id, agentId: r.agent_id, threadId: r.public_thread_id }]));
    },

    async renameThread(table, from, to) {
      return db.prepare(`UPDATE ${quote(table)} SET thread_id = ? WHERE thread_id = ?`).run(to, from).changes;
    },

    async deleteThreads(table, threadIds) {
      const stmt = db.prepare(`DELETE FROM ${quote(table)} WHERE thread_id = ?`);
      let deleted = 0;
      for (const id of threadIds) deleted += stmt.run(id).changes;
      return deleted;
    },

    async close() {
      db.close();
    },
  };
  return store;
}
