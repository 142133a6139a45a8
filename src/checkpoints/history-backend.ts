import Database from "better-sqlite3";
import pg from "pg";
import type { Config } from "../config/schema.ts";
import type { CheckpointBackend } from "./backend.ts";
import { IndexedSaver, type HistoryIndexStore } from "./history-index.ts";
import { MemoryHistoryIndex, PostgresHistoryIndex, SqliteHistoryIndex } from "./history-index-stores.ts";

/** The saver's own connection: the index lives in the same database and schema. */
function ownConnection<T>(saver: unknown, field: string, kind: abstract new (...args: never[]) => T): T {
  const value = (saver as Record<string, unknown>)[field];
  if (!(value instanceof kind)) throw new Error(`checkpoint saver has no ${field} to keep the history index in`);
  return value;
}

/**
 * The backend with its saver wrapped in an IndexedSaver, so every checkpoint the service writes
 * also updates the message index that history pages read. Call once per worker at startup.
 */
export async function withHistoryIndex(
  backend: CheckpointBackend,
  config: Config,
  onIndexError: (error: unknown) => void,
): Promise<CheckpointBackend> {
  let store: HistoryIndexStore;
  switch (backend.kind) {
    case "memory":
      store = new MemoryHistoryIndex();
      break;
    case "filedb":
      store = new SqliteHistoryIndex(ownConnection(backend.saver, "db", Database));
      break;
    case "serverdb": {
      const postgres = new PostgresHistoryIndex(ownConnection(backend.saver, "pool", pg.Pool), config.SERVERDB_SCHEMA);
      await postgres.setup();
      store = postgres;
      break;
    }
  }
  return {
    kind: backend.kind,
    saver: new IndexedSaver(backend.saver, store, onIndexError),
    ping: () => backend.ping(),
    saturated: () => backend.saturated(),
    close: () => backend.close(),
  };
}
