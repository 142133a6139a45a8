import type Database from "better-sqlite3";
import type pg from "pg";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";

/**
 * Which of several threads have anything stored, and each one's latest root checkpoint id (ids are
 * time-ordered, so the largest is the one written last), read without reviving any checkpoint. On
 * a database it is one statement for all the threads: the Platform API asks it of every agent's
 * conversation with a thread id it has no record of, on each run on a new thread.
 */
export interface LatestCheckpoints {
  /** Storage key → its latest root checkpoint's id, for each key with a checkpoint; the others are absent. */
  latest(threadIds: readonly string[]): Promise<Map<string, string>>;
}

interface LatestRow {
  readonly thread_id: string;
  readonly checkpoint_id: string;
}

const mapOf = (rows: readonly LatestRow[]) => new Map(rows.map((row) => [row.thread_id, row.checkpoint_id]));

/**
 * SQLite (the library's `checkpoints` table): one statement over its primary key. Prepared at first
 * use: the library's saver creates its tables on its own first use.
 */
export class SqliteLatestCheckpoints implements LatestCheckpoints {
  private statement: Database.Statement | undefined;

  constructor(private readonly db: Database.Database) {}

  async latest(threadIds: readonly string[]): Promise<Map<string, string>> {
    if (!threadIds.length) return new Map();
    this.statement ??= this.db.prepare(
      `SELECT thread_id, max(checkpoint_id) AS checkpoint_id FROM checkpoints
WHERE checkpoint_ns = '' AND thread_id IN (SELECT value FROM json_each(?)) GROUP BY thread_id`,
    );
    return mapOf(this.statement.all(JSON.stringify(threadIds)) as LatestRow[]);
  }
}

/** PostgreSQL (the library's `checkpoints` table in the saver's schema): one statement, one round trip. */
export class PostgresLatestCheckpoints implements LatestCheckpoints {
  private readonly sql: string;

  constructor(
    private readonly pool: pg.Pool,
    schema: string,
  ) {
    this.sql = `SELECT thread_id, max(checkpoint_id) AS checkpoint_id FROM "${schema}".checkpoints
WHERE thread_id = ANY($1::text[]) AND checkpoint_ns = '' GROUP BY thread_id`;
  }

  async latest(threadIds: readonly string[]): Promise<Map<string, string>> {
    if (!threadIds.length) return new Map();
    const { rows } = await this.pool.query<LatestRow>(this.sql, [threadIds]);
    return mapOf(rows);
  }
}

/** Any saver, one `getTuple` per thread (the memory backend's, where a read costs no round trip). */
export class SaverLatestCheckpoints implements LatestCheckpoints {
  constructor(private readonly saver: BaseCheckpointSaver) {}

  async latest(threadIds: readonly string[]): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    for (const threadId of threadIds) {
      const tuple = await this.saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: "" } });
      if (tuple) found.set(threadId, tuple.checkpoint.id);
    }
    return found;
  }
}
