import Database from "better-sqlite3";
import pg from "pg";
import type { Config } from "../config/schema.ts";
import type { CheckpointBackend } from "./backend.ts";
import { MemoryMessageRows, PostgresMessageRows, SqliteMessageRows, type MessageRows } from "./message-rows.ts";
import { MessageStoreSaver } from "./message-store.ts";

/** The saver's own connection: the message rows live in the same database and schema. */
function ownConnection<T>(saver: unknown, field: string, kind: abstract new (...args: never[]) => T): T {
  const value = (saver as Record<string, unknown>)[field];
  if (!(value instanceof kind)) throw new Error(`checkpoint saver has no ${field} to keep the message rows in`);
  return value;
}

/**
 * The backend with its saver wrapped in the message store, so every checkpoint the service writes
 * keeps its messages once per thread (see message-store.ts). Call once per worker at startup.
 */
export async function withMessageStore(backend: CheckpointBackend, config: Config): Promise<CheckpointBackend> {
  let rows: MessageRows;
  switch (backend.kind) {
    case "memory":
      rows = new MemoryMessageRows();
      break;
    case "filedb":
      rows = new SqliteMessageRows(ownConnection(backend.saver, "db", Database));
      break;
    case "serverdb": {
      const postgres = new PostgresMessageRows(ownConnection(backend.saver, "pool", pg.Pool), config.SERVERDB_SCHEMA);
      await postgres.setup();
      rows = postgres;
      break;
    }
  }
  return {
    kind: backend.kind,
    saver: new MessageStoreSaver(backend.saver, rows, config.MESSAGE_CACHE_SIZE),
    ping: () => backend.ping(),
    saturated: () => backend.saturated(),
    close: () => backend.close(),
  };
}
