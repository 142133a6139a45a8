import { Writable } from "node:stream";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { openCheckpointBackend, type CheckpointBackend } from "../checkpoints/backend.ts";
import { MemoryMessageRows, MESSAGE_TABLE, PostgresMessageRows, SqliteMessageRows, type MessageRows } from "../checkpoints/message-rows.ts";
import { MessageStoreSaver } from "../checkpoints/message-store.ts";
import { ReadableSerde } from "../checkpoints/readable-serde.ts";
import { decideLibraryShortcuts } from "../config/library-shortcuts.ts";
import { loadConfig } from "../config/load.ts";
import { createLogger } from "../observability/logger.ts";
import type { Target } from "./args.ts";
import { MaintenanceRefusal, oneLine } from "./refusal.ts";
import { connectPool, databaseUrl } from "./server-connection.ts";
import { openSqliteForReading } from "./sqlite-reading.ts";

/**
 * agenthost's own saver stack on the service's database, for the commands that move conversations
 * in and out of it: read as the service reads it (export), written as the service writes it (import).
 */

type ReadVariable = (name: string) => string | undefined;

/** Revived messages the reader keeps, as the service's MESSAGE_CACHE_SIZE default. */
const READ_CACHE_MESSAGES = 50_000;

/** The service's database, read through the message store: every `messages` value resolved to its list. */
export interface ServiceReader {
  readonly saver: MessageStoreSaver;
  close(): Promise<void>;
}

/**
 * Read the service's checkpoints as a worker reads them, without writing anything: LangGraph's
 * saver on the database (a SQLite file opened read-only; PostgreSQL without any setup) under the
 * message store, which resolves its key ranges from the message rows. A database without the
 * message table has no key ranges to resolve.
 */
export async function openServiceReader(target: Target, readVariable: ReadVariable): Promise<ServiceReader> {
  const serde = new ReadableSerde();
  if (target.backend === "filedb") {
    const reading = await openSqliteForReading(target.path, ["checkpoints", "writes"], "start the service once on it to bring the file up to date");
    const rows: MessageRows = reading.tables.has(MESSAGE_TABLE) ? new SqliteMessageRows(reading.db) : new MemoryMessageRows();
    return {
      saver: new MessageStoreSaver(new SqliteSaver(reading.db, serde), rows, READ_CACHE_MESSAGES),
      close: async () => reading.close(),
    };
  }
  const pool = await connectPool(databaseUrl(target.envName, readVariable));
  const inner = new PostgresSaver(pool, serde, { schema: target.schema });
  return {
    saver: new MessageStoreSaver(inner, new PostgresMessageRows(pool, target.schema), READ_CACHE_MESSAGES),
    close: () => pool.end(),
  };
}

/**
 * Open the service's database exactly as a worker does (openCheckpointBackend, with the library
 * shortcuts a worker takes by default), so what is written is what the service writes: the message
 * store's rows and key ranges, its conversation list. Its setup creates the service's tables that
 * are missing, as a worker's start would. Refused when the database cannot be set up.
 */
export async function openServiceWriter(target: Target, readVariable: ReadVariable): Promise<CheckpointBackend> {
  const env: Record<string, string> =
    target.backend === "filedb"
      ? { ENV_MODE: "development", LOG_LEVEL: "warn", MEMORY_BACKEND: "filedb", FILEDB_DB_PATH: target.path }
      : {
          ENV_MODE: "development",
          LOG_LEVEL: "warn",
          MEMORY_BACKEND: "serverdb",
          DATABASE_URL: databaseUrl(target.envName, readVariable),
          SERVERDB_SCHEMA: target.schema,
          SERVERDB_QUERY_TIMEOUT: "300",
        };
  const config = loadConfig(env);
  // The setup's failures are logged, not thrown (a worker keeps trying): keep the last reason.
  let reason = "the database could not be set up";
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n")) {
        if (!line) continue;
        try {
          const found = (JSON.parse(line) as { db?: { reason?: unknown } }).db?.reason;
          if (typeof found === "string" && found) reason = found;
        } catch {
          // Not a log line of ours: nothing to keep.
        }
      }
      done();
    },
  });
  const logger = createLogger(config, sink);
  const shortcuts = decideLibraryShortcuts(config.LIBRARY_SHORTCUTS, { warn: () => undefined });
  let backend: CheckpointBackend;
  try {
    backend = await openCheckpointBackend(config, { logger, shortcuts });
  } catch (error) {
    throw new MaintenanceRefusal(`cannot open the service's database: ${oneLine((error as Error).message)}`);
  }
  if (!backend.isReady()) {
    await backend.close();
    throw new MaintenanceRefusal(`cannot open the service's database: ${oneLine(reason)}`);
  }
  return backend;
}
