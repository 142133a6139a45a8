import { closeSync, existsSync, fsyncSync, linkSync, openSync, renameSync, rmSync } from "node:fs";
import { dirname } from "node:path";
import Database from "../checkpoints/sqlite-driver.ts";
import type pg from "pg";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { ReadableSerde } from "../checkpoints/readable-serde.ts";
import { MaintenanceRefusal } from "./refusal.ts";
import { connectPool, databaseUrl } from "./server-connection.ts";
import { openSqliteForReading } from "./sqlite-reading.ts";
import type { StandardLocation } from "./transfer-args.ts";
import type { StandardDescription } from "./transfer-report.ts";

/**
 * LangGraph's standard checkpoint format, read and written by the library's own savers
 * (@langchain/langgraph-checkpoint-sqlite's SqliteSaver, -postgres's PostgresSaver) with the
 * service's serializer: JSON by LangChain's JsonPlusSerializer (ReadableSerde stores exactly its
 * bytes). What the export writes is the library's format because the library writes it.
 */

type ReadVariable = (name: string) => string | undefined;

/** A standard database to import from: read only, never changed. */
export interface StandardSource {
  readonly saver: BaseCheckpointSaver;
  readonly describe: StandardDescription;
  /** Every thread id that has checkpoints, sorted. */
  threadIds(): Promise<string[]>;
  close(): Promise<void>;
}

/** A new standard database being written by an export; it exists under its name only once committed. */
export interface StandardTarget {
  readonly saver: BaseCheckpointSaver;
  /** Run one conversation's writes as one unit where the database allows it (a SQLite transaction). */
  unit<T>(fn: () => Promise<T>): Promise<T>;
  /** Make what was written the target: the file appears under its name (the schema already has it). */
  commit(): Promise<void>;
  /** Remove everything written: the unfinished file, or the schema this export created. */
  abandon(): Promise<void>;
}

/** The tables each saver reads; the source is refused without them. */
const SQLITE_TABLES = ["checkpoints", "writes"];
const POSTGRES_TABLES = ["checkpoints", "checkpoint_blobs", "checkpoint_writes"];

export function describeLocation(location: StandardLocation): StandardDescription {
  return location.kind === "sqlite" ? { filedb_path: location.path } : { schema: location.schema };
}

const quoted = (name: string) => `"${name.replace(/"/g, '""')}"`;

function plural(names: readonly string[]): string {
  return `${names.join(", ")} table${names.length > 1 ? "s" : ""}`;
}

async function schemaExists(pool: pg.Pool, schema: string): Promise<boolean> {
  const { rows } = await pool.query("SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1", [schema]);
  return rows.length > 0;
}

/**
 * Open a standard database to read, without changing it: a SQLite file read-only (see
 * openSqliteForReading), a PostgreSQL schema without the saver's setup (no migrations run on it).
 */
export async function openStandardSource(location: StandardLocation, readVariable: ReadVariable): Promise<StandardSource> {
  if (location.kind === "sqlite") return openSqliteSource(location.path);
  const pool = await connectPool(databaseUrl(location.envName, readVariable));
  try {
    const { rows } = await pool.query<{ relname: string }>(
      `SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND c.relname = ANY($2::text[])`,
      [location.schema, POSTGRES_TABLES],
    );
    const missing = POSTGRES_TABLES.filter((t) => !rows.some((r) => r.relname === t));
    if (missing.length) {
      throw new MaintenanceRefusal(`schema ${JSON.stringify(location.schema)} has no ${plural(missing)} (is it a schema LangGraph's PostgresSaver wrote?)`);
    }
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw error;
  }
  const table = `${quoted(location.schema)}.checkpoints`;
  return {
    saver: new PostgresSaver(pool, new ReadableSerde(), { schema: location.schema }),
    describe: describeLocation(location),
    async threadIds() {
      return (await pool.query<{ thread_id: string }>(`SELECT DISTINCT thread_id FROM ${table} ORDER BY thread_id`)).rows.map((r) => r.thread_id);
    },
    close: () => pool.end(),
  };
}

async function openSqliteSource(path: string): Promise<StandardSource> {
  const reading = await openSqliteForReading(path, SQLITE_TABLES, "is it a file LangGraph's SqliteSaver wrote?");
  const { db } = reading;
  return {
    saver: new SqliteSaver(db, new ReadableSerde()),
    describe: { filedb_path: path },
    async threadIds() {
      return db.prepare("SELECT DISTINCT thread_id FROM checkpoints ORDER BY thread_id").pluck().all() as string[];
    },
    async close() {
      reading.close();
    },
  };
}

/**
 * Refuse a target that exists already: an export writes a new file or a new schema, never into an
 * existing one. A dry run checks this too, so it previews the apply.
 */
export async function checkStandardTargetFree(location: StandardLocation, readVariable: ReadVariable): Promise<void> {
  if (location.kind === "sqlite") {
    if (existsSync(location.path)) throw new MaintenanceRefusal(`${JSON.stringify(location.path)} already exists; the export writes a new file`);
    if (!existsSync(dirname(location.path))) throw new MaintenanceRefusal(`the folder of ${JSON.stringify(location.path)} does not exist`);
    return;
  }
  const pool = await connectPool(databaseUrl(location.envName, readVariable));
  try {
    if (await schemaExists(pool, location.schema)) {
      throw new MaintenanceRefusal(`schema ${JSON.stringify(location.schema)} already exists; the export creates a new schema`);
    }
  } finally {
    await pool.end().catch(() => undefined);
  }
}

/** Start writing a new standard database with the library's saver, its tables created by its own setup. */
export async function createStandardTarget(location: StandardLocation, readVariable: ReadVariable): Promise<StandardTarget> {
  await checkStandardTargetFree(location, readVariable);
  return location.kind === "sqlite" ? createSqliteTarget(location.path) : createPostgresTarget(location.envName, location.schema, readVariable);
}

/**
 * The file is written under a temporary name beside it, without waiting for the disk on each
 * commit (it is not the target until it is complete), then synced and given its name with a hard
 * link, which never replaces a file that appeared meanwhile.
 */
async function createSqliteTarget(path: string): Promise<StandardTarget> {
  const partial = `${path}.${process.pid}.partial`;
  const remove = () => {
    for (const suffix of ["", "-wal", "-shm"]) rmSync(partial + suffix, { force: true });
  };
  const db = new Database(partial);
  db.pragma("synchronous = OFF");
  const saver = new SqliteSaver(db, new ReadableSerde());
  try {
    // Its setup (creating its tables, so even an export of nothing is a file the saver reads) runs on first use.
    await saver.getTuple({ configurable: { thread_id: "" } });
  } catch (error) {
    db.close();
    remove();
    throw error;
  }
  return {
    saver,
    async unit(fn) {
      db.exec("BEGIN IMMEDIATE");
      try {
        const result = await fn();
        db.exec("COMMIT");
        return result;
      } catch (error) {
        if (db.inTransaction) db.exec("ROLLBACK");
        throw error;
      }
    },
    async commit() {
      // Closing the last connection copies the WAL into the file and deletes it.
      db.close();
      const fd = openSync(partial, "r+");
      try {
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      try {
        linkSync(partial, path);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "EEXIST") throw new MaintenanceRefusal(`${JSON.stringify(path)} appeared during the export; nothing was written`);
        // A file system without hard links: rename, once no file has taken the name.
        if (existsSync(path)) throw new MaintenanceRefusal(`${JSON.stringify(path)} appeared during the export; nothing was written`);
        renameSync(partial, path);
        return;
      }
      rmSync(partial, { force: true });
    },
    async abandon() {
      if (db.open) db.close();
      remove();
    },
  };
}

/** The schema is created here (so an existing one is never written into) and dropped again on failure. */
async function createPostgresTarget(envName: string, schema: string, readVariable: ReadVariable): Promise<StandardTarget> {
  const pool = await connectPool(databaseUrl(envName, readVariable));
  try {
    await pool.query(`CREATE SCHEMA ${quoted(schema)}`);
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw new MaintenanceRefusal(`cannot create schema ${JSON.stringify(schema)}: ${(error as Error).message}`);
  }
  const saver = new PostgresSaver(pool, new ReadableSerde(), { schema });
  const target: StandardTarget = {
    saver,
    unit: (fn) => fn(),
    commit: () => pool.end(),
    async abandon() {
      await pool.query(`DROP SCHEMA IF EXISTS ${quoted(schema)} CASCADE`).catch(() => undefined);
      await pool.end().catch(() => undefined);
    },
  };
  try {
    await saver.setup();
  } catch (error) {
    await target.abandon();
    throw error;
  }
  return target;
}
