import type Database from "better-sqlite3";
import type pg from "pg";
import { inTransaction, withSetupLock } from "./pg-transaction.ts";
import { NULL_TASK_ID, type HistoryIndexStore, type IndexEntry, type LatestCheckpoint } from "./history-index.ts";

/**
 * The index tables, beside the saver's own: one entry per root-namespace checkpoint and the
 * chunks of message lists by content hash. Both are keyed by thread_id first, so clearing,
 * retention and migration handle them with `WHERE thread_id = ...` like the saver's tables.
 */
export const INDEX_TABLE = "agenthost_history_index";
export const CHUNK_TABLE = "agenthost_history_chunks";

function parseEntry(total: unknown, chunkSize: unknown, chunks: unknown): IndexEntry | undefined {
  if (total === null || total === undefined || typeof chunks !== "string") return undefined;
  const list: unknown = JSON.parse(chunks);
  if (!Array.isArray(list) || !list.every((h) => typeof h === "string")) return undefined;
  return { total: Number(total), chunkSize: Number(chunkSize), chunks: list as string[] };
}

/** In-process index for the memory backend; lost with the worker like the checkpoints. */
export class MemoryHistoryIndex implements HistoryIndexStore {
  private readonly threads = new Map<string, { latest: string; entries: Map<string, IndexEntry>; chunks: Map<string, string> }>();

  private thread(threadId: string) {
    let thread = this.threads.get(threadId);
    if (!thread) {
      thread = { latest: "", entries: new Map(), chunks: new Map() };
      this.threads.set(threadId, thread);
    }
    return thread;
  }

  async latest(threadId: string): Promise<LatestCheckpoint> {
    const thread = this.threads.get(threadId);
    if (!thread || !thread.latest) return { found: false };
    return { found: true, checkpointId: thread.latest, entry: thread.entries.get(thread.latest), pendingMessageWrites: false };
  }

  async existingChunks(threadId: string, hashes: readonly string[]): Promise<Set<string>> {
    const chunks = this.threads.get(threadId)?.chunks;
    return new Set(hashes.filter((hash) => chunks?.has(hash)));
  }

  async write(threadId: string, checkpointId: string, entry: IndexEntry, newChunks: ReadonlyArray<readonly [string, string]>) {
    const thread = this.thread(threadId);
    for (const [hash, text] of newChunks) thread.chunks.set(hash, text);
    thread.entries.set(checkpointId, entry);
    if (checkpointId > thread.latest) thread.latest = checkpointId;
  }

  async readChunks(threadId: string, hashes: readonly string[]): Promise<Map<string, string>> {
    const chunks = this.threads.get(threadId)?.chunks;
    const out = new Map<string, string>();
    for (const hash of hashes) {
      const text = chunks?.get(hash);
      if (text !== undefined) out.set(hash, text);
    }
    return out;
  }

  async deleteThread(threadId: string): Promise<void> {
    this.threads.delete(threadId);
  }
}

/** The index in the SQLite file, next to SqliteSaver's `checkpoints` and `writes` tables. */
export class SqliteHistoryIndex implements HistoryIndexStore {
  private readonly latestStmt;
  private readonly insertEntry;
  private readonly insertChunk;

  constructor(private readonly db: Database.Database) {
    db.exec(`
CREATE TABLE IF NOT EXISTS ${INDEX_TABLE} (
  thread_id TEXT NOT NULL,
  checkpoint_ns TEXT NOT NULL DEFAULT '',
  checkpoint_id TEXT NOT NULL,
  total INTEGER NOT NULL,
  chunk_size INTEGER NOT NULL,
  chunks TEXT NOT NULL,
  PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
);
CREATE TABLE IF NOT EXISTS ${CHUNK_TABLE} (
  thread_id TEXT NOT NULL,
  checkpoint_ns TEXT NOT NULL DEFAULT '',
  chunk_hash TEXT NOT NULL,
  messages TEXT NOT NULL,
  PRIMARY KEY (thread_id, checkpoint_ns, chunk_hash)
);`);
    // Only the primary-key index of `checkpoints` is read: the checkpoint blob is never loaded.
    this.latestStmt = db.prepare(`
SELECT c.checkpoint_id AS checkpoint_id, i.total AS total, i.chunk_size AS chunk_size, i.chunks AS chunks,
  EXISTS (SELECT 1 FROM writes w WHERE w.thread_id = c.thread_id AND w.checkpoint_ns = c.checkpoint_ns
          AND w.checkpoint_id = c.checkpoint_id AND w.task_id = '${NULL_TASK_ID}' AND w.channel = 'messages') AS pending
FROM checkpoints c
LEFT JOIN ${INDEX_TABLE} i ON i.thread_id = c.thread_id AND i.checkpoint_ns = c.checkpoint_ns AND i.checkpoint_id = c.checkpoint_id
WHERE c.thread_id = ? AND c.checkpoint_ns = ''
ORDER BY c.checkpoint_id DESC LIMIT 1`);
    this.insertEntry = db.prepare(
      `INSERT OR REPLACE INTO ${INDEX_TABLE} (thread_id, checkpoint_ns, checkpoint_id, total, chunk_size, chunks) VALUES (?, '', ?, ?, ?, ?)`,
    );
    this.insertChunk = db.prepare(`INSERT OR IGNORE INTO ${CHUNK_TABLE} (thread_id, checkpoint_ns, chunk_hash, messages) VALUES (?, '', ?, ?)`);
  }

  async latest(threadId: string): Promise<LatestCheckpoint> {
    const row = this.latestStmt.get(threadId) as
      | { checkpoint_id: string; total: number | null; chunk_size: number | null; chunks: string | null; pending: number }
      | undefined;
    if (!row) return { found: false };
    return {
      found: true,
      checkpointId: row.checkpoint_id,
      entry: parseEntry(row.total, row.chunk_size, row.chunks),
      pendingMessageWrites: row.pending === 1,
    };
  }

  async existingChunks(threadId: string, hashes: readonly string[]): Promise<Set<string>> {
    const found = new Set<string>();
    // SQLite caps bound parameters; 500 per statement stays far below every build's limit.
    for (let i = 0; i < hashes.length; i += 500) {
      const part = hashes.slice(i, i + 500);
      const rows = this.db
        .prepare(`SELECT chunk_hash FROM ${CHUNK_TABLE} WHERE thread_id = ? AND checkpoint_ns = '' AND chunk_hash IN (${part.map(() => "?").join(",")})`)
        .pluck()
        .all(threadId, ...part) as string[];
      for (const hash of rows) found.add(hash);
    }
    return found;
  }

  async write(threadId: string, checkpointId: string, entry: IndexEntry, newChunks: ReadonlyArray<readonly [string, string]>) {
    this.db.transaction(() => {
      for (const [hash, text] of newChunks) this.insertChunk.run(threadId, hash, text);
      this.insertEntry.run(threadId, checkpointId, entry.total, entry.chunkSize, JSON.stringify(entry.chunks));
    })();
  }

  async readChunks(threadId: string, hashes: readonly string[]): Promise<Map<string, string>> {
    const rows = this.db
      .prepare(`SELECT chunk_hash, messages FROM ${CHUNK_TABLE} WHERE thread_id = ? AND checkpoint_ns = '' AND chunk_hash IN (${hashes.map(() => "?").join(",")})`)
      .all(threadId, ...hashes) as Array<{ chunk_hash: string; messages: string }>;
    return new Map(rows.map((row) => [row.chunk_hash, row.messages]));
  }

  async deleteThread(threadId: string): Promise<void> {
    this.db.transaction(() => {
      this.db.prepare(`DELETE FROM ${INDEX_TABLE} WHERE thread_id = ?`).run(threadId);
      this.db.prepare(`DELETE FROM ${CHUNK_TABLE} WHERE thread_id = ?`).run(threadId);
    })();
  }
}

/** The index in PostgreSQL, in the saver's schema next to `checkpoints`. */
export class PostgresHistoryIndex implements HistoryIndexStore {
  private readonly index: string;
  private readonly chunks: string;
  private readonly checkpoints: string;
  private readonly writes: string;

  constructor(
    private readonly pool: pg.Pool,
    schema: string,
  ) {
    this.index = `"${schema}".${INDEX_TABLE}`;
    this.chunks = `"${schema}".${CHUNK_TABLE}`;
    this.checkpoints = `"${schema}".checkpoints`;
    this.writes = `"${schema}".checkpoint_writes`;
  }

  /** Create the tables under an advisory lock, so workers starting together do not race. */
  async setup(): Promise<void> {
    await withSetupLock(this.pool, `agenthost:history-index:${this.index}`, async (client) => {
      await client.query(`
CREATE TABLE IF NOT EXISTS ${this.index} (
  thread_id TEXT NOT NULL,
  checkpoint_ns TEXT NOT NULL DEFAULT '',
  checkpoint_id TEXT NOT NULL,
  total INTEGER NOT NULL,
  chunk_size INTEGER NOT NULL,
  chunks TEXT NOT NULL,
  PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
)`);
      await client.query(`
CREATE TABLE IF NOT EXISTS ${this.chunks} (
  thread_id TEXT NOT NULL,
  checkpoint_ns TEXT NOT NULL DEFAULT '',
  chunk_hash TEXT NOT NULL,
  messages TEXT NOT NULL,
  PRIMARY KEY (thread_id, checkpoint_ns, chunk_hash)
)`);
    });
  }

  async latest(threadId: string): Promise<LatestCheckpoint> {
    const { rows } = await this.pool.query<{ checkpoint_id: string; total: number | null; chunk_size: number | null; chunks: string | null; pending: boolean }>(
      `
SELECT c.checkpoint_id, i.total, i.chunk_size, i.chunks,
  EXISTS (SELECT 1 FROM ${this.writes} w WHERE w.thread_id = c.thread_id AND w.checkpoint_ns = c.checkpoint_ns
          AND w.checkpoint_id = c.checkpoint_id AND w.task_id = $2 AND w.channel = 'messages') AS pending
FROM ${this.checkpoints} c
LEFT JOIN ${this.index} i ON i.thread_id = c.thread_id AND i.checkpoint_ns = c.checkpoint_ns AND i.checkpoint_id = c.checkpoint_id
WHERE c.thread_id = $1 AND c.checkpoint_ns = ''
ORDER BY c.checkpoint_id DESC LIMIT 1`,
      [threadId, NULL_TASK_ID],
    );
    const row = rows[0];
    if (!row) return { found: false };
    return {
      found: true,
      checkpointId: row.checkpoint_id,
      entry: parseEntry(row.total, row.chunk_size, row.chunks),
      pendingMessageWrites: row.pending,
    };
  }

  async existingChunks(threadId: string, hashes: readonly string[]): Promise<Set<string>> {
    const { rows } = await this.pool.query<{ chunk_hash: string }>(
      `SELECT chunk_hash FROM ${this.chunks} WHERE thread_id = $1 AND checkpoint_ns = '' AND chunk_hash = ANY($2)`,
      [threadId, hashes],
    );
    return new Set(rows.map((row) => row.chunk_hash));
  }

  async write(threadId: string, checkpointId: string, entry: IndexEntry, newChunks: ReadonlyArray<readonly [string, string]>) {
    await inTransaction(this.pool, async (client) => {
      if (newChunks.length) {
        await client.query(
          `INSERT INTO ${this.chunks} (thread_id, checkpoint_ns, chunk_hash, messages)
           SELECT $1, '', h, m FROM unnest($2::text[], $3::text[]) AS t(h, m)
           ON CONFLICT DO NOTHING`,
          [threadId, newChunks.map(([hash]) => hash), newChunks.map(([, text]) => text)],
        );
      }
      await client.query(
        `INSERT INTO ${this.index} (thread_id, checkpoint_ns, checkpoint_id, total, chunk_size, chunks)
         VALUES ($1, '', $2, $3, $4, $5)
         ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id)
         DO UPDATE SET total = EXCLUDED.total, chunk_size = EXCLUDED.chunk_size, chunks = EXCLUDED.chunks`,
        [threadId, checkpointId, entry.total, entry.chunkSize, JSON.stringify(entry.chunks)],
      );
    });
  }

  async readChunks(threadId: string, hashes: readonly string[]): Promise<Map<string, string>> {
    const { rows } = await this.pool.query<{ chunk_hash: string; messages: string }>(
      `SELECT chunk_hash, messages FROM ${this.chunks} WHERE thread_id = $1 AND checkpoint_ns = '' AND chunk_hash = ANY($2)`,
      [threadId, hashes],
    );
    return new Map(rows.map((row) => [row.chunk_hash, row.messages]));
  }

  async deleteThread(threadId: string): Promise<void> {
    await inTransaction(this.pool, async (client) => {
      await client.query(`DELETE FROM ${this.index} WHERE thread_id = $1`, [threadId]);
      await client.query(`DELETE FROM ${this.chunks} WHERE thread_id = $1`, [threadId]);
    });
  }
}
