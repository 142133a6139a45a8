import pg from "pg";
import { MaintenanceRefusal } from "./refusal.ts";
import type { CheckpointStore, CheckpointTime, TableLayout } from "./store.ts";
import { IDEMPOTENCY_TABLE } from "../checkpoints/idempotency-store.ts";
import { LEGACY_INDEX_TABLES, MESSAGE_TABLE } from "../checkpoints/message-rows.ts";
import { THREAD_TABLE } from "../checkpoints/thread-index.ts";
import { createPostgresThreadTable } from "../checkpoints/thread-index-sql.ts";

/**
 * The PostgresSaver's tables (@langchain/langgraph-checkpoint-postgres). Its `checkpoint_migrations`
 * table records the schema version and is left alone.
 */
export const SERVERDB_LAYOUT: TableLayout = {
  checkpoints: "checkpoints",
  required: ["checkpoints", "checkpoint_blobs"],
  optional: ["checkpoint_writes", MESSAGE_TABLE, ...LEGACY_INDEX_TABLES, THREAD_TABLE, IDEMPOTENCY_TABLE],
};

const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * Connect to PostgreSQL. A write transaction locks the checkpoint tables against other writers and
 * waits at most `lockTimeoutMs` for a worker that is still running before it refuses.
 */
export async function openServerdbStore(
  connectionString: string,
  schema: string,
  lockTimeoutMs = 5000,
): Promise<CheckpointStore> {
  const client = new pg.Client({ connectionString, application_name: "agenthost-maintenance" });
  // A connection error after connect (server restart) must not crash the process unreported.
  client.on("error", () => undefined);
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => undefined);
    throw new MaintenanceRefusal(`cannot connect to the server database: ${(error as Error).message}`);
  }
  const table = (name: string) => `${ident(schema)}.${ident(name)}`;
  const rows = async <R extends pg.QueryResultRow>(sql: string, params: unknown[] = []) =>
    (await client.query<R>(sql, params)).rows;

  return {
    backend: "serverdb",
    layout: SERVERDB_LAYOUT,
    describe: { schema },

    async transaction(mode, fn) {
      if (mode === "write") {
        await client.query("BEGIN ISOLATION LEVEL READ COMMITTED");
        await client.query(`SET LOCAL lock_timeout = ${Math.max(1, Math.floor(lockTimeoutMs))}`);
      } else {
        await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
      }
      try {
        const result = await fn();
        await client.query(mode === "write" ? "COMMIT" : "ROLLBACK");
        return result;
      } catch (error) {
        await client.query("ROLLBACK").catch(() => undefined);
        throw error;
      }
    },

    async existingTables(names) {
      const found = await rows<{ relname: string }>(
        `SELECT c.relname FROM pg_catalog.pg_class c
           JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND c.relname = ANY($2::text[])`,
        [schema, names],
      );
      return new Set(found.map((r) => r.relname));
    },

    async lockForWrite(tables) {
      // Blocks writers (and another maintenance run), lets readers through, until COMMIT/ROLLBACK.
      await client.query(`LOCK TABLE ${tables.map(table).join(", ")} IN SHARE ROW EXCLUSIVE MODE`);
    },

    async threadIds(name) {
      return (await rows<{ thread_id: string }>(`SELECT DISTINCT thread_id FROM ${table(name)}`)).map((r) => r.thread_id);
    },

    async countRows(name, threadIds) {
      const found = await rows<{ thread_id: string; n: string }>(
        `SELECT thread_id, count(*) AS n FROM ${table(name)} WHERE thread_id = ANY($1::text[]) GROUP BY thread_id`,
        [threadIds],
      );
      return new Map(found.map((r) => [r.thread_id, Number(r.n)]));
    },

    async canonicalCheckpointTimes() {
      // The saver stores the checkpoint (without channel values) as JSONB; `ts` is a top-level field.
      const found = await rows<{ thread_id: string; checkpoint_ns: string; checkpoint_id: string; ts: unknown }>(
        `SELECT thread_id, checkpoint_ns, checkpoint_id, checkpoint -> 'ts' AS ts
           FROM ${table(SERVERDB_LAYOUT.checkpoints)}
          WHERE left(thread_id, 7) = 'lat:v1:'`,
      );
      return found.map(
        (r): CheckpointTime => ({ threadId: r.thread_id, checkpointNs: r.checkpoint_ns, checkpointId: r.checkpoint_id, ts: r.ts }),
      );
    },

    async checkpointTimesOf(threadId) {
      const found = await rows<{ ts: unknown }>(`SELECT checkpoint -> 'ts' AS ts FROM ${table(SERVERDB_LAYOUT.checkpoints)} WHERE thread_id = $1`, [threadId]);
      return found.map((r) => r.ts);
    },

    async listThread(threadId, owner, createdAt, updatedAt) {
      await createPostgresThreadTable(client, schema);
      await client.query(
        `INSERT INTO ${table(THREAD_TABLE)} (thread_id, user_id, agent_id, public_thread_id, title, message_count, created_at, updated_at)
         VALUES ($1, $2, $3, $4, NULL, NULL, $5, $6)
         ON CONFLICT (thread_id) DO UPDATE SET user_id = excluded.user_id, agent_id = excluded.agent_id, public_thread_id = excluded.public_thread_id`,
        [threadId, owner.userId, owner.agentId, owner.threadId, createdAt, updatedAt],
      );
    },

    async threadOwners() {
      const found = await rows<{ thread_id: string; user_id: string; agent_id: string; public_thread_id: string }>(
        `SELECT thread_id, user_id, agent_id, public_thread_id FROM ${table(THREAD_TABLE)}`,
      );
      return new Map(found.map((r) => [r.thread_id, { userId: r.user_id, agentId: r.agent_id, threadId: r.public_thread_id }]));
    },

    async renameThread(name, from, to) {
      return (await client.query(`UPDATE ${table(name)} SET thread_id = $1 WHERE thread_id = $2`, [to, from])).rowCount ?? 0;
    },

    async deleteThreads(name, threadIds) {
      return (
        (await client.query(`DELETE FROM ${table(name)} WHERE thread_id = ANY($1::text[])`, [threadIds])).rowCount ?? 0
      );
    },

    async close() {
      await client.end().catch(() => undefined);
    },
  };
}
