import type Database from "better-sqlite3";
import type pg from "pg";
import { withSetupLock } from "./pg-transaction.ts";
import { THREAD_TABLE, type ListedConversation, type ThreadEntry, type ThreadIndex, type ThreadOwner, type ThreadPage, type ThreadPosition, type ThreadSummary } from "./thread-index.ts";
import { SqliteCommitGroup } from "./sqlite-commit-group.ts";

/**
 * The conversation list in the checkpoint database (see thread-index.ts): `thread_id` is the
 * storage key, as in every table of the service, so clearing, retention and migration handle it
 * with `WHERE thread_id = ...`; the owner index serves a page as one range scan.
 */

export const COLUMNS = "thread_id, user_id, agent_id, public_thread_id, title, message_count, created_at, updated_at";

interface Row {
  thread_id: string;
  public_thread_id: string;
  title: string | null;
  message_count: number | string | null;
  created_at: number | string;
  updated_at: number | string;
}

function entryOf(row: Row): ThreadEntry {
  return {
    storageKey: row.thread_id,
    threadId: row.public_thread_id,
    title: row.title,
    messageCount: row.message_count === null ? null : Number(row.message_count),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

/** The table's definition in `table` (a name, quoted and schema-qualified where needed), with `time` the type of its millisecond columns. */
function threadTableDdl(table: string, time: "INTEGER" | "BIGINT"): readonly string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${table} (
  thread_id TEXT NOT NULL PRIMARY KEY,
  user_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  public_thread_id TEXT NOT NULL,
  title TEXT,
  message_count INTEGER,
  created_at ${time} NOT NULL,
  updated_at ${time} NOT NULL
)`,
    `CREATE INDEX IF NOT EXISTS ${THREAD_TABLE}_by_owner ON ${table} (user_id, agent_id, updated_at DESC, public_thread_id)`,
    // Retention reads the least recently updated conversations first.
    `CREATE INDEX IF NOT EXISTS ${THREAD_TABLE}_by_updated ON ${table} (updated_at)`,
  ];
}

interface ListedRow {
  thread_id: string;
  user_id: string;
  agent_id: string;
  public_thread_id: string;
  updated_at: number | string;
}

const listedOf = (row: ListedRow): ListedConversation => ({
  storageKey: row.thread_id,
  owner: { userId: row.user_id, agentId: row.agent_id, threadId: row.public_thread_id },
  updatedAt: Number(row.updated_at),
});

const LISTED_COLUMNS = "thread_id, user_id, agent_id, public_thread_id, updated_at";

/**
 * The caller's rows after a place in the list, in list order: `updated_at <= at` bounds the owner
 * index's range (so the scan starts at the place, not at the top of the list); the rest drops the
 * rows of the same millisecond up to the place's thread id. Parameters: user, agent, at, at, thread id.
 */
const AFTER_WHERE = (p: (n: number) => string) =>
  `user_id = ${p(1)} AND agent_id = ${p(2)} AND updated_at <= ${p(3)} AND (updated_at < ${p(4)} OR public_thread_id > ${p(5)})`;

/** A time bound as the databases take it: no later than the largest safe integer (not Infinity). */
const clamp = (ms: number): number => Math.min(ms, Number.MAX_SAFE_INTEGER);

/** The table in a SQLite file; also used by bin/maintenance when it migrates a conversation. */
export function createSqliteThreadTable(db: Database.Database): void {
  for (const statement of threadTableDdl(THREAD_TABLE, "INTEGER")) db.exec(statement);
}

/** The table in a PostgreSQL schema (quoted), under the caller's transaction. */
export async function createPostgresThreadTable(client: pg.ClientBase, schema: string): Promise<void> {
  for (const statement of threadTableDdl(`"${schema}".${THREAD_TABLE}`, "BIGINT")) await client.query(statement);
}

/** What a write of an existing conversation's row changes (the table aliased as its own name in PostgreSQL). */
export const UPSERT_TAIL = `ON CONFLICT (thread_id) DO UPDATE SET
  message_count = excluded.message_count,
  updated_at = excluded.updated_at,
  title = COALESCE(excluded.title, ${THREAD_TABLE}.title)`;

export class SqliteThreadIndex implements ThreadIndex {
  private readonly touchStmt;
  private readonly pageStmt;
  private readonly afterStmt;
  private readonly countStmt;
  private readonly fillStmt;
  private readonly deleteStmt;
  private readonly withinStmt;
  private readonly updatedStmt;

  /** Its writes go through the connection's commit group (sqlite-commit-group.ts); reads run at once. */
  private readonly group: SqliteCommitGroup;

  constructor(db: Database.Database) {
    this.group = SqliteCommitGroup.of(db);
    createSqliteThreadTable(db);
    this.touchStmt = db.prepare(`INSERT INTO ${THREAD_TABLE} (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ${UPSERT_TAIL}`);
    this.pageStmt = db.prepare(
      `SELECT ${COLUMNS} FROM ${THREAD_TABLE} WHERE user_id = ? AND agent_id = ? ORDER BY updated_at DESC, public_thread_id LIMIT ? OFFSET ?`,
    );
    this.afterStmt = db.prepare(`SELECT ${COLUMNS} FROM ${THREAD_TABLE} WHERE ${AFTER_WHERE(() => "?")} ORDER BY updated_at DESC, public_thread_id LIMIT ?`);
    this.countStmt = db.prepare(`SELECT count(*) FROM ${THREAD_TABLE} WHERE user_id = ? AND agent_id = ?`).pluck();
    this.fillStmt = db.prepare(`UPDATE ${THREAD_TABLE} SET message_count = ?, title = ? WHERE thread_id = ? AND message_count IS NULL`);
    this.deleteStmt = db.prepare(`DELETE FROM ${THREAD_TABLE} WHERE thread_id = ?`);
    this.withinStmt = db.prepare(`SELECT ${LISTED_COLUMNS} FROM ${THREAD_TABLE} WHERE updated_at >= ? AND updated_at < ? ORDER BY updated_at LIMIT ?`);
    this.updatedStmt = db.prepare(`SELECT updated_at FROM ${THREAD_TABLE} WHERE thread_id = ?`).pluck();
  }

  async updatedWithin(from: number, to: number, limit: number): Promise<ListedConversation[]> {
    return (this.withinStmt.all(from, clamp(to), limit) as ListedRow[]).map(listedOf);
  }

  async updatedAt(storageKey: string): Promise<number | undefined> {
    const at = this.updatedStmt.get(storageKey) as number | undefined;
    return at === undefined ? undefined : Number(at);
  }

  async touch(storageKey: string, owner: ThreadOwner, summary: ThreadSummary, now: number): Promise<void> {
    await this.group.commit(() => this.touchNow(storageKey, owner, summary, now));
  }

  /** `touch`, synchronously, in the caller's transaction (a member of the commit group: SqliteFileSaver's). */
  touchNow(storageKey: string, owner: ThreadOwner, summary: ThreadSummary, now: number): void {
    this.touchStmt.run(storageKey, owner.userId, owner.agentId, owner.threadId, summary.title, summary.messageCount, now, now);
  }

  async list(userId: string, agentId: string, offset: number, limit: number): Promise<ThreadPage> {
    const rows = this.pageStmt.all(userId, agentId, limit, offset) as Row[];
    return { entries: rows.map(entryOf), total: this.countStmt.get(userId, agentId) as number };
  }

  async listAfter(userId: string, agentId: string, after: ThreadPosition, limit: number): Promise<ThreadPage> {
    const rows = this.afterStmt.all(userId, agentId, after.updatedAt, after.updatedAt, after.threadId, limit) as Row[];
    return { entries: rows.map(entryOf), total: this.countStmt.get(userId, agentId) as number };
  }

  async fill(storageKey: string, summary: ThreadSummary): Promise<void> {
    await this.group.commit(() => this.fillStmt.run(summary.messageCount, summary.title, storageKey));
  }

  async deleteThread(storageKey: string): Promise<void> {
    await this.group.commit(() => this.deleteStmt.run(storageKey));
  }
}

export class PostgresThreadIndex implements ThreadIndex {
  private readonly table: string;

  constructor(
    private readonly pool: pg.Pool,
    private readonly schema: string,
  ) {
    this.table = `"${schema}".${THREAD_TABLE}`;
  }

  async setup(): Promise<void> {
    await withSetupLock(this.pool, `agenthost:threads:${this.table}`, (client) => createPostgresThreadTable(client, this.schema));
  }

  async touch(storageKey: string, owner: ThreadOwner, summary: ThreadSummary, now: number): Promise<void> {
    await this.pool.query(`INSERT INTO ${this.table} AS ${THREAD_TABLE} (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ${UPSERT_TAIL}`, [
      storageKey,
      owner.userId,
      owner.agentId,
      owner.threadId,
      summary.title,
      summary.messageCount,
      now,
    ]);
  }

  async list(userId: string, agentId: string, offset: number, limit: number): Promise<ThreadPage> {
    return this.page(userId, agentId, `user_id = $1 AND agent_id = $2 ORDER BY updated_at DESC, public_thread_id LIMIT $3 OFFSET $4`, [limit, offset]);
  }

  async listAfter(userId: string, agentId: string, after: ThreadPosition, limit: number): Promise<ThreadPage> {
    return this.page(userId, agentId, `${AFTER_WHERE((n) => `$${n}`)} ORDER BY updated_at DESC, public_thread_id LIMIT $6`, [
      after.updatedAt,
      after.updatedAt,
      after.threadId,
      limit,
    ]);
  }

  /** The rows `where` selects (its parameters: user, agent, then `params`) and the caller's count. */
  private async page(userId: string, agentId: string, where: string, params: unknown[]): Promise<ThreadPage> {
    const [page, count] = await Promise.all([
      this.pool.query<Row>(`SELECT ${COLUMNS} FROM ${this.table} WHERE ${where}`, [userId, agentId, ...params]),
      this.pool.query<{ total: string }>(`SELECT count(*) AS total FROM ${this.table} WHERE user_id = $1 AND agent_id = $2`, [userId, agentId]),
    ]);
    return { entries: page.rows.map(entryOf), total: Number(count.rows[0]?.total ?? 0) };
  }

  async fill(storageKey: string, summary: ThreadSummary): Promise<void> {
    await this.pool.query(`UPDATE ${this.table} SET message_count = $1, title = $2 WHERE thread_id = $3 AND message_count IS NULL`, [
      summary.messageCount,
      summary.title,
      storageKey,
    ]);
  }

  async deleteThread(storageKey: string): Promise<void> {
    await this.pool.query(`DELETE FROM ${this.table} WHERE thread_id = $1`, [storageKey]);
  }

  async updatedWithin(from: number, to: number, limit: number): Promise<ListedConversation[]> {
    const { rows } = await this.pool.query<ListedRow>(
      `SELECT ${LISTED_COLUMNS} FROM ${this.table} WHERE updated_at >= $1 AND updated_at < $2 ORDER BY updated_at LIMIT $3`,
      [from, clamp(to), limit],
    );
    return rows.map(listedOf);
  }

  async updatedAt(storageKey: string): Promise<number | undefined> {
    const { rows } = await this.pool.query<{ updated_at: string }>(`SELECT updated_at FROM ${this.table} WHERE thread_id = $1`, [storageKey]);
    return rows[0] ? Number(rows[0].updated_at) : undefined;
  }
}
