import type Database from "better-sqlite3";
import type pg from "pg";
import { inTransaction, withSetupLock } from "./pg-transaction.ts";
import { SqliteCommitGroup } from "./sqlite-commit-group.ts";

/**
 * Where the message store keeps each message of a conversation once: one row per (thread, key),
 * the message serialised by the saver's serde. Keys are integers allocated per thread in order, so
 * a checkpoint's message list is a short list of key ranges. Rows are never updated: a message
 * changed by id is a new row under a new key. The table is keyed by thread_id first, so clearing,
 * retention and migration handle it with `WHERE thread_id = ...` like the saver's own tables.
 */
export const MESSAGE_TABLE = "agenthost_messages";

/** The history index tables of the previous release: no longer written, still moved and deleted with their thread. */
export const LEGACY_INDEX_TABLES = ["agenthost_history_index", "agenthost_history_chunks"] as const;

export interface MessageRows {
  /** The highest key stored for the thread, or -1. */
  maxKey(threadId: string): Promise<number>;
  /** Store new rows; a key that already exists is an error (keys are never reused). */
  insert(threadId: string, rows: ReadonlyArray<readonly [number, string]>): Promise<void>;
  /** Rows by key; a key that is not stored is absent from the map. */
  read(threadId: string, keys: readonly number[]): Promise<Map<number, string>>;
  /**
   * Delete the thread's rows but its highest key's, which is emptied: a conversation started again
   * under the same storage key counts its keys on from there, so no worker's cache of the first
   * one's messages is ever asked for a key the second one reused.
   */
  deleteThread(threadId: string): Promise<void>;
}

/** In-process rows for the memory backend; lost with the worker like its checkpoints. */
export class MemoryMessageRows implements MessageRows {
  private readonly threads = new Map<string, Map<number, string>>();

  async maxKey(threadId: string): Promise<number> {
    let max = -1;
    for (const key of this.threads.get(threadId)?.keys() ?? []) if (key > max) max = key;
    return max;
  }

  async insert(threadId: string, rows: ReadonlyArray<readonly [number, string]>): Promise<void> {
    let thread = this.threads.get(threadId);
    if (!thread) this.threads.set(threadId, (thread = new Map()));
    for (const [key] of rows) if (thread.has(key)) throw new Error(`message key ${key} is already stored for this thread`);
    for (const [key, text] of rows) thread.set(key, text);
  }

  async read(threadId: string, keys: readonly number[]): Promise<Map<number, string>> {
    const thread = this.threads.get(threadId);
    const out = new Map<number, string>();
    for (const key of keys) {
      const text = thread?.get(key);
      if (text !== undefined) out.set(key, text);
    }
    return out;
  }

  async deleteThread(threadId: string): Promise<void> {
    const max = await this.maxKey(threadId);
    if (max < 0) return;
    this.threads.set(threadId, new Map([[max, ""]]));
  }

  /** Empty the rows under `keys`, keeping the keys taken (see thread-rewind.ts). */
  release(threadId: string, keys: readonly number[]): void {
    const thread = this.threads.get(threadId);
    for (const key of keys) if (thread?.has(key)) thread.set(key, "");
  }
}

/** SQLite caps bound parameters; 500 per statement stays far below every build's limit. */
const SQLITE_BATCH = 500;

/** The rows in the SQLite file, next to SqliteSaver's `checkpoints` and `writes` tables. */
export class SqliteMessageRows implements MessageRows {
  private readonly maxStmt;
  private readonly insertStmt;

  /** Its writes go through the connection's commit group (sqlite-commit-group.ts); reads run at once. */
  private readonly group: SqliteCommitGroup;

  constructor(private readonly db: Database.Database) {
    this.group = SqliteCommitGroup.of(db);
    db.exec(`
CREATE TABLE IF NOT EXISTS ${MESSAGE_TABLE} (
  thread_id TEXT NOT NULL,
  message_key INTEGER NOT NULL,
  message TEXT NOT NULL,
  PRIMARY KEY (thread_id, message_key)
) WITHOUT ROWID`);
    this.maxStmt = db.prepare(`SELECT max(message_key) FROM ${MESSAGE_TABLE} WHERE thread_id = ?`).pluck();
    this.insertStmt = db.prepare(`INSERT INTO ${MESSAGE_TABLE} (thread_id, message_key, message) VALUES (?, ?, ?)`);
  }

  async maxKey(threadId: string): Promise<number> {
    const max = this.maxStmt.get(threadId) as number | null;
    return max ?? -1;
  }

  async insert(threadId: string, rows: ReadonlyArray<readonly [number, string]>): Promise<void> {
    await this.group.commit(() => this.insertNow(threadId, rows));
  }

  /** `insert`, synchronously, in the caller's transaction (a member of the commit group: SqliteFileSaver's). */
  insertNow(threadId: string, rows: ReadonlyArray<readonly [number, string]>): void {
    for (const [key, text] of rows) this.insertStmt.run(threadId, key, text);
  }

  async read(threadId: string, keys: readonly number[]): Promise<Map<number, string>> {
    const out = new Map<number, string>();
    for (let i = 0; i < keys.length; i += SQLITE_BATCH) {
      const part = keys.slice(i, i + SQLITE_BATCH);
      const rows = this.db
        .prepare(`SELECT message_key, message FROM ${MESSAGE_TABLE} WHERE thread_id = ? AND message_key IN (${part.map(() => "?").join(",")})`)
        .all(threadId, ...part) as Array<{ message_key: number; message: string }>;
      for (const row of rows) out.set(row.message_key, row.message);
    }
    return out;
  }

  async deleteThread(threadId: string): Promise<void> {
    await this.group.commit(() => {
      this.db.prepare(`DELETE FROM ${MESSAGE_TABLE} WHERE thread_id = ? AND message_key < (SELECT max(message_key) FROM ${MESSAGE_TABLE} WHERE thread_id = ?)`).run(threadId, threadId);
      this.db.prepare(`UPDATE ${MESSAGE_TABLE} SET message = '' WHERE thread_id = ?`).run(threadId);
      for (const table of LEGACY_INDEX_TABLES) {
        const exists = this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table);
        if (exists) this.db.prepare(`DELETE FROM ${table} WHERE thread_id = ?`).run(threadId);
      }
    });
  }
}

/** The rows in PostgreSQL, in the saver's schema next to `checkpoints`. */
export class PostgresMessageRows implements MessageRows {
  private readonly table: string;

  constructor(
    private readonly pool: pg.Pool,
    private readonly schema: string,
  ) {
    this.table = `"${schema}".${MESSAGE_TABLE}`;
  }

  /** Create the table under an advisory lock, so workers starting together do not race. */
  async setup(): Promise<void> {
    await withSetupLock(this.pool, `agenthost:messages:${this.table}`, async (client) => {
      await client.query(`
CREATE TABLE IF NOT EXISTS ${this.table} (
  thread_id TEXT NOT NULL,
  message_key INTEGER NOT NULL,
  message TEXT NOT NULL,
  PRIMARY KEY (thread_id, message_key)
)`);
    });
  }

  async maxKey(threadId: string): Promise<number> {
    const { rows } = await this.pool.query<{ max: number | null }>(`SELECT max(message_key) AS max FROM ${this.table} WHERE thread_id = $1`, [threadId]);
    return rows[0]?.max ?? -1;
  }

  async insert(threadId: string, rows: ReadonlyArray<readonly [number, string]>): Promise<void> {
    if (!rows.length) return;
    await this.pool.query(
      `INSERT INTO ${this.table} (thread_id, message_key, message) SELECT $1, k, m FROM unnest($2::int[], $3::text[]) AS t(k, m)`,
      [threadId, rows.map(([key]) => key), rows.map(([, text]) => text)],
    );
  }

  async read(threadId: string, keys: readonly number[]): Promise<Map<number, string>> {
    const { rows } = await this.pool.query<{ message_key: number; message: string }>(
      `SELECT message_key, message FROM ${this.table} WHERE thread_id = $1 AND message_key = ANY($2::int[])`,
      [threadId, keys],
    );
    return new Map(rows.map((row) => [row.message_key, row.message]));
  }

  async deleteThread(threadId: string): Promise<void> {
    await inTransaction(this.pool, async (client) => {
      await client.query(`DELETE FROM ${this.table} WHERE thread_id = $1 AND message_key < (SELECT max(message_key) FROM ${this.table} WHERE thread_id = $1)`, [threadId]);
      await client.query(`UPDATE ${this.table} SET message = '' WHERE thread_id = $1`, [threadId]);
      for (const table of LEGACY_INDEX_TABLES) {
        const { rows } = await client.query<{ found: string | null }>("SELECT to_regclass($1) AS found", [`"${this.schema}".${table}`]);
        if (rows[0]?.found) await client.query(`DELETE FROM "${this.schema}".${table} WHERE thread_id = $1`, [threadId]);
      }
    });
  }
}
