/**
 * The throwaway database of the retention benchmark (retention-scale.ts), on either backend, with the
 * few operations the fill and the checks need: a fresh SQLite file in a temporary folder, or a fresh
 * PostgreSQL database (`agenthost_bench_scale` beside BENCH_DATABASE_URL's, trust authentication)
 * that is dropped at the end. SQL is written with `$1`, `$2`… in order; SQLite gets `?` for each.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type BetterSqlite3 from "better-sqlite3";
import Database from "../src/checkpoints/sqlite-driver.ts";
import pg from "pg";

export type BackendName = "filedb" | "serverdb";

export interface BenchDatabase {
  readonly kind: BackendName;
  /** What the tables print. */
  readonly label: string;
  /** The service's settings for this database. */
  readonly env: Record<string, string>;
  /** Open the connection the fill and checks use (after the service has created the tables). */
  connect(): Promise<void>;
  rows(sql: string, params?: readonly unknown[]): Promise<Array<Record<string, unknown>>>;
  /** Statements in one transaction. */
  transaction(work: (run: (sql: string, params?: readonly unknown[]) => Promise<void>) => Promise<void>): Promise<void>;
  /** Every table and its columns, in order. */
  tables(): Promise<Map<string, string[]>>;
  /** What a long-lived database has after its writes settle: PostgreSQL vacuumed and analysed, SQLite's WAL folded in. */
  settle(): Promise<void>;
  /** Bytes on disk. */
  bytes(): Promise<number>;
  /** Close the connection and delete the database. */
  drop(): Promise<void>;
}

const sqliteSql = (sql: string) => sql.replaceAll(/\$\d+/g, "?");

export function sqliteDatabase(): BenchDatabase {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agenthost-bench-scale-"));
  const file = path.join(dir, "bench.sqlite");
  let db: BetterSqlite3.Database | undefined;
  const open = () => {
    if (!db) throw new Error("not connected");
    return db;
  };
  return {
    kind: "filedb",
    label: "SQLite (filedb)",
    env: { MEMORY_BACKEND: "filedb", FILEDB_DB_PATH: file },
    connect: async () => {
      db = new Database(file, { timeout: 30_000 });
      db.pragma("journal_mode = WAL");
      db.pragma("synchronous = NORMAL");
      // This connection's own page cache (the service's connections keep SQLite's default).
      db.pragma("cache_size = -262144");
    },
    rows: async (sql, params = []) => {
      const statement = open().prepare(sqliteSql(sql));
      if (statement.reader) return statement.all(...params) as Array<Record<string, unknown>>;
      statement.run(...params);
      return [];
    },
    transaction: async (work) => {
      const conn = open();
      conn.exec("BEGIN IMMEDIATE");
      try {
        await work(async (sql, params = []) => void conn.prepare(sqliteSql(sql)).run(...params));
        conn.exec("COMMIT");
      } catch (error) {
        conn.exec("ROLLBACK");
        throw error;
      }
    },
    tables: async () => {
      const conn = open();
      const names = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").pluck().all() as string[];
      return new Map(names.map((name) => [name, (conn.prepare(`PRAGMA table_info("${name}")`).all() as Array<{ name: string }>).map((c) => c.name)]));
    },
    settle: async () => void open().pragma("wal_checkpoint(TRUNCATE)"),
    bytes: async () =>
      fs
        .readdirSync(dir)
        .filter((name) => name.startsWith("bench.sqlite"))
        .reduce((sum, name) => sum + fs.statSync(path.join(dir, name)).size, 0),
    drop: async () => {
      db?.close();
      db = undefined;
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const BENCH_DATABASE_NAME = "agenthost_bench_scale";

/** A fresh PostgreSQL database on the server of `url` (dropped first if a crashed run left it). */
export async function postgresDatabase(url: string): Promise<BenchDatabase> {
  const admin = new URL(url);
  const target = new URL(url);
  target.pathname = `/${BENCH_DATABASE_NAME}`;
  const onServer = async (sql: string) => {
    const client = new pg.Client({ connectionString: admin.toString() });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await onServer(`DROP DATABASE IF EXISTS ${BENCH_DATABASE_NAME} WITH (FORCE)`);
  await onServer(`CREATE DATABASE ${BENCH_DATABASE_NAME}`);
  let client: pg.Client | undefined;
  const open = () => {
    if (!client) throw new Error("not connected");
    return client;
  };
  return {
    kind: "serverdb",
    label: "PostgreSQL (serverdb)",
    env: { MEMORY_BACKEND: "serverdb", DATABASE_URL: target.toString(), SERVERDB_SCHEMA: "public" },
    connect: async () => {
      client = new pg.Client({ connectionString: target.toString() });
      await client.connect();
    },
    rows: async (sql, params = []) => (await open().query(sql, params as unknown[])).rows as Array<Record<string, unknown>>,
    transaction: async (work) => {
      const conn = open();
      await conn.query("BEGIN");
      try {
        await work(async (sql, params = []) => void (await conn.query(sql, params as unknown[])));
        await conn.query("COMMIT");
      } catch (error) {
        await conn.query("ROLLBACK");
        throw error;
      }
    },
    tables: async () => {
      const { rows } = await open().query<{ table_name: string; column_name: string }>(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position",
      );
      const out = new Map<string, string[]>();
      for (const row of rows) out.set(row.table_name, [...(out.get(row.table_name) ?? []), row.column_name]);
      return out;
    },
    settle: async () => void (await open().query("VACUUM ANALYZE")),
    bytes: async () => Number((await open().query<{ bytes: string }>("SELECT pg_database_size(current_database()) AS bytes")).rows[0]!.bytes),
    drop: async () => {
      await client?.end();
      client = undefined;
      await onServer(`DROP DATABASE IF EXISTS ${BENCH_DATABASE_NAME} WITH (FORCE)`);
    },
  };
}
