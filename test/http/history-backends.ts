import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { DATABASE_URL } from "../helpers/postgres.ts";

/** The PostgreSQL every integration test uses; each test gets its own schema. */
export const TEST_DATABASE_URL = DATABASE_URL;

export interface BackendUnderTest {
  readonly name: "memory" | "filedb" | "serverdb";
  readonly env: Record<string, string>;
  /** Rows of the thread left in every checkpoint and message table (empty for memory). */
  rowsOf(threadId: string): Promise<Record<string, number>>;
  cleanup(): Promise<void>;
}

export function memoryBackend(): BackendUnderTest {
  return { name: "memory", env: {}, rowsOf: async () => ({}), cleanup: async () => {} };
}

export function sqliteBackend(): BackendUnderTest {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agenthost-history-"));
  const file = path.join(dir, "checkpoints.sqlite");
  return {
    name: "filedb",
    env: { MEMORY_BACKEND: "filedb", FILEDB_DB_PATH: file },
    async rowsOf(threadId) {
      const { default: Database } = await import("../../src/checkpoints/sqlite-driver.ts");
      const db = new Database(file, { readonly: true });
      try {
        const out: Record<string, number> = {};
        for (const table of ["checkpoints", "writes", "agenthost_messages"]) {
          out[table] = (db.prepare(`SELECT count(*) AS n FROM ${table} WHERE thread_id = ?`).get(threadId) as { n: number }).n;
        }
        return out;
      } finally {
        db.close();
      }
    },
    cleanup: async () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}

export function postgresBackend(): BackendUnderTest {
  const schema = `t_history_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const query = async <T extends pg.QueryResultRow>(sql: string, params: unknown[] = []) => {
    const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await client.connect();
    try {
      return (await client.query<T>(sql, params)).rows;
    } finally {
      await client.end();
    }
  };
  return {
    name: "serverdb",
    env: { MEMORY_BACKEND: "serverdb", DATABASE_URL: TEST_DATABASE_URL, SERVERDB_SCHEMA: schema },
    async rowsOf(threadId) {
      const out: Record<string, number> = {};
      for (const table of ["checkpoints", "checkpoint_blobs", "checkpoint_writes", "agenthost_messages"]) {
        const [row] = await query<{ n: string }>(`SELECT count(*) AS n FROM "${schema}".${table} WHERE thread_id = $1`, [threadId]);
        out[table] = Number(row!.n);
      }
      return out;
    },
    cleanup: async () => {
      await query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    },
  };
}

export const ALL_BACKENDS = [memoryBackend, sqliteBackend, postgresBackend];
