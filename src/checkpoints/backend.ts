import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { MemorySaver, type BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import type { Config } from "../config/schema.ts";
import { withSetupLock } from "./pg-transaction.ts";
import { ReadableSerde } from "./readable-serde.ts";

export type BackendKind = Config["MEMORY_BACKEND"];

/**
 * The checkpoint saver of one worker and what readiness needs to know about its database. Every
 * saver reads through ReadableSerde, so stored data that cannot be revived is reported as such.
 */
export interface CheckpointBackend {
  readonly kind: BackendKind;
  readonly saver: BaseCheckpointSaver;
  /** Resolves when the database answers a trivial query; rejects otherwise. */
  ping(): Promise<void>;
  /** True while every pooled connection is busy and callers are queueing for one. */
  saturated(): boolean;
  close(): Promise<void>;
}

/** Connections per worker for the server database. */
const SERVERDB_POOL_SIZE = 10;
const SERVERDB_CONNECT_TIMEOUT_MS = 5_000;

/** SqliteSaver with its schema created eagerly at startup instead of on first use. */
class FileSaver extends SqliteSaver {
  initialise(): void {
    this.setup();
  }
}

export async function openCheckpointBackend(config: Config): Promise<CheckpointBackend> {
  switch (config.MEMORY_BACKEND) {
    case "memory":
      return {
        kind: "memory",
        saver: new MemorySaver(new ReadableSerde()),
        ping: async () => {},
        saturated: () => false,
        close: async () => {},
      };
    case "filedb":
      return openFileBackend(config.FILEDB_DB_PATH);
    case "serverdb":
      return openServerBackend(config.DATABASE_URL!, config.SERVERDB_SCHEMA);
  }
}

function openFileBackend(file: string): CheckpointBackend {
  fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const db = new Database(file);
  // WAL lets readers work beside the one writer; several workers share the file, so wait for the
  // write lock instead of failing at once.
  db.pragma("journal_mode = WAL");
  db.pragma("busy_timeout = 10000");
  db.pragma("synchronous = NORMAL");
  const saver = new FileSaver(db, new ReadableSerde());
  saver.initialise();
  return {
    kind: "filedb",
    saver,
    ping: async () => {
      db.prepare("SELECT 1").get();
    },
    saturated: () => false,
    close: async () => {
      db.close();
    },
  };
}

async function openServerBackend(connectionString: string, schema: string): Promise<CheckpointBackend> {
  const pool = new pg.Pool({
    connectionString,
    max: SERVERDB_POOL_SIZE,
    connectionTimeoutMillis: SERVERDB_CONNECT_TIMEOUT_MS,
    idleTimeoutMillis: 30_000,
  });
  // An idle client losing its connection must not crash the worker; the next query reports it.
  pool.on("error", () => {});
  const saver = new PostgresSaver(pool, new ReadableSerde(), { schema });
  // The saver's migrations run under the lock; they use their own pooled connection.
  await withSetupLock(pool, `agenthost:setup:${schema}`, () => saver.setup());
  return {
    kind: "serverdb",
    saver,
    ping: async () => {
      await pool.query("SELECT 1");
    },
    saturated: () => pool.totalCount >= SERVERDB_POOL_SIZE && pool.idleCount === 0 && pool.waitingCount > 0,
    close: () => pool.end(),
  };
}
