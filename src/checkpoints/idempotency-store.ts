import type Database from "better-sqlite3";
import type pg from "pg";
import { withSetupLock } from "./pg-transaction.ts";
import { SqliteCommitGroup } from "./sqlite-commit-group.ts";

/**
 * Idempotency keys in the checkpoint database, so a retry is recognised by every worker and host and
 * after a restart. One row per scope (a hash of the caller, the agent and the key): the request's
 * fingerprint, whether its first request is still running (and until when that claim holds), and
 * once it finished the answer to replay. `thread_id` is the storage key of the conversation the
 * answer belongs to (null for feedback, or while running), so retention deletes the row with its
 * thread; `run_id` the run that answered (null when none did), replayed in `X-Run-Id`. Every row also
 * expires (IDEMPOTENCY_TTL) and expired rows are swept as new keys arrive.
 */
export const IDEMPOTENCY_TABLE = "agenthost_idempotency";

/** The answer of a finished request, as replayed. */
export interface StoredAnswer {
  readonly status: number;
  /** The body as JSON text. */
  readonly body: string;
  /** The run that answered (an invoke's), null when the request started none. */
  readonly runId: string | null;
}

/** What is stored under a scope that a new request could not claim. */
export interface IdempotencyRecord {
  readonly fingerprint: string;
  /** Null while the first request is still running. */
  readonly answer: StoredAnswer | null;
}

export type ClaimOutcome = { readonly claimed: true } | { readonly claimed: false; readonly record: IdempotencyRecord };

export interface IdempotencyStore {
  /**
   * Claim `scope` for a request now: succeeds when nothing is stored, or what is stored expired, or
   * its first request's claim ran out (`runningUntil` of that request passed: it died or hung).
   */
  claim(scope: string, fingerprint: string, now: number, runningUntil: number, expiresAt: number): Promise<ClaimOutcome>;
  /** Store the answer of the claimed request; `threadId` is its conversation's storage key (null: none). */
  complete(scope: string, threadId: string | null, answer: StoredAnswer, expiresAt: number): Promise<void>;
  /** Give the claim up (the request failed): a retry runs again. */
  release(scope: string): Promise<void>;
  /** Delete rows that expired before `now`. */
  sweep(now: number): Promise<void>;
  /** Delete the answers stored for one conversation (its storage key), with the conversation. */
  deleteThread(threadId: string): Promise<void>;
}

interface StoredRow {
  fingerprint: string;
  status: number | null;
  body: string | null;
  run_id: string | null;
  expires_at: number | string;
  running_until: number | string | null;
}

function recordOf(row: StoredRow): IdempotencyRecord {
  return {
    fingerprint: row.fingerprint,
    answer: row.status === null || row.body === null ? null : { status: row.status, body: row.body, runId: row.run_id },
  };
}

/** A row that a new request may take over: expired, or a first request whose claim ran out. */
function isStale(row: StoredRow, now: number): boolean {
  if (Number(row.expires_at) <= now) return true;
  return row.status === null && row.running_until !== null && Number(row.running_until) <= now;
}

interface MemoryRow extends StoredRow {
  thread_id: string | null;
}

/** The memory backend's keys: in this process, lost with it like its conversations. */
export class MemoryIdempotencyStore implements IdempotencyStore {
  private readonly rows = new Map<string, MemoryRow>();

  async claim(scope: string, fingerprint: string, now: number, runningUntil: number, expiresAt: number): Promise<ClaimOutcome> {
    const row = this.rows.get(scope);
    if (row && !isStale(row, now)) return { claimed: false, record: recordOf(row) };
    this.rows.set(scope, { fingerprint, status: null, body: null, run_id: null, expires_at: expiresAt, running_until: runningUntil, thread_id: null });
    return { claimed: true };
  }

  async complete(scope: string, threadId: string | null, answer: StoredAnswer, expiresAt: number): Promise<void> {
    const row = this.rows.get(scope);
    const { status, body, runId } = answer;
    if (row) this.rows.set(scope, { ...row, thread_id: threadId, status, body, run_id: runId, expires_at: expiresAt, running_until: null });
  }

  async release(scope: string): Promise<void> {
    this.rows.delete(scope);
  }

  async sweep(now: number): Promise<void> {
    for (const [scope, row] of this.rows) if (Number(row.expires_at) <= now) this.rows.delete(scope);
  }

  async deleteThread(threadId: string): Promise<void> {
    for (const [scope, row] of this.rows) if (row.thread_id === threadId) this.rows.delete(scope);
  }
}

const SQLITE_DDL = `
CREATE TABLE IF NOT EXISTS ${IDEMPOTENCY_TABLE} (
  scope TEXT NOT NULL PRIMARY KEY,
  thread_id TEXT,
  fingerprint TEXT NOT NULL,
  status INTEGER,
  body TEXT,
  run_id TEXT,
  running_until INTEGER,
  expires_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS ${IDEMPOTENCY_TABLE}_by_thread ON ${IDEMPOTENCY_TABLE} (thread_id);
CREATE INDEX IF NOT EXISTS ${IDEMPOTENCY_TABLE}_by_expiry ON ${IDEMPOTENCY_TABLE} (expires_at)`;

/**
 * The claim as one statement: insert, or take over a stale row; RETURNING says whether it did.
 * Parameters: scope, fingerprint, running_until, expires_at, now.
 */
const claimSql = (table: string, p: (n: number) => string) => `
INSERT INTO ${table} AS held (scope, thread_id, fingerprint, status, body, run_id, running_until, expires_at)
VALUES (${p(1)}, NULL, ${p(2)}, NULL, NULL, NULL, ${p(3)}, ${p(4)})
ON CONFLICT (scope) DO UPDATE SET thread_id = NULL, fingerprint = excluded.fingerprint, status = NULL, body = NULL, run_id = NULL,
  running_until = excluded.running_until, expires_at = excluded.expires_at
WHERE held.expires_at <= ${p(5)} OR (held.status IS NULL AND held.running_until <= ${p(5)})
RETURNING scope`;

/** Claims that lose a race with a release try again this many times. */
const CLAIM_ATTEMPTS = 3;

export class SqliteIdempotencyStore implements IdempotencyStore {
  private readonly claimStmt;
  private readonly readStmt;
  private readonly completeStmt;
  private readonly releaseStmt;
  private readonly sweepStmt;

  /** Its writes go through the connection's commit group (sqlite-commit-group.ts). */
  private readonly group: SqliteCommitGroup;

  constructor(private readonly db: Database.Database) {
    this.group = SqliteCommitGroup.of(db);
    db.exec(SQLITE_DDL);
    // A table made before answers named their run gets the column (ALTER TABLE has no IF NOT EXISTS here).
    const columns = db.prepare(`SELECT name FROM pragma_table_info('${IDEMPOTENCY_TABLE}')`).pluck().all() as string[];
    if (!columns.includes("run_id")) db.exec(`ALTER TABLE ${IDEMPOTENCY_TABLE} ADD COLUMN run_id TEXT`);
    this.claimStmt = db.prepare(claimSql(IDEMPOTENCY_TABLE, () => "?"));
    this.readStmt = db.prepare(`SELECT fingerprint, status, body, run_id, expires_at, running_until FROM ${IDEMPOTENCY_TABLE} WHERE scope = ?`);
    this.completeStmt = db.prepare(
      `UPDATE ${IDEMPOTENCY_TABLE} SET thread_id = ?, status = ?, body = ?, run_id = ?, expires_at = ?, running_until = NULL WHERE scope = ?`,
    );
    this.releaseStmt = db.prepare(`DELETE FROM ${IDEMPOTENCY_TABLE} WHERE scope = ?`);
    this.sweepStmt = db.prepare(`DELETE FROM ${IDEMPOTENCY_TABLE} WHERE expires_at <= ?`);
  }

  async claim(scope: string, fingerprint: string, now: number, runningUntil: number, expiresAt: number): Promise<ClaimOutcome> {
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
      const outcome = await this.group.commit((): ClaimOutcome | undefined => {
        if (this.claimStmt.get(scope, fingerprint, runningUntil, expiresAt, now, now)) return { claimed: true };
        const row = this.readStmt.get(scope) as StoredRow | undefined;
        return row && { claimed: false, record: recordOf(row) };
      });
      if (outcome) return outcome;
    }
    throw new Error("the idempotency key could not be claimed");
  }

  async complete(scope: string, threadId: string | null, answer: StoredAnswer, expiresAt: number): Promise<void> {
    await this.group.commit(() => this.completeStmt.run(threadId, answer.status, answer.body, answer.runId, expiresAt, scope));
  }

  async release(scope: string): Promise<void> {
    await this.group.commit(() => this.releaseStmt.run(scope));
  }

  async sweep(now: number): Promise<void> {
    await this.group.commit(() => this.sweepStmt.run(now));
  }

  async deleteThread(threadId: string): Promise<void> {
    await this.group.commit(() => this.db.prepare(`DELETE FROM ${IDEMPOTENCY_TABLE} WHERE thread_id = ?`).run(threadId));
  }
}

export class PostgresIdempotencyStore implements IdempotencyStore {
  private readonly table: string;

  constructor(
    private readonly pool: pg.Pool,
    private readonly schema: string,
  ) {
    this.table = `"${schema}".${IDEMPOTENCY_TABLE}`;
  }

  async setup(): Promise<void> {
    await withSetupLock(this.pool, `agenthost:idempotency:${this.table}`, async (client) => {
      await client.query(`
CREATE TABLE IF NOT EXISTS ${this.table} (
  scope TEXT NOT NULL PRIMARY KEY,
  thread_id TEXT,
  fingerprint TEXT NOT NULL,
  status INTEGER,
  body TEXT,
  run_id TEXT,
  running_until BIGINT,
  expires_at BIGINT NOT NULL
)`);
      // A table made before answers named their run gets the column (looked up first: an ALTER TABLE
      // locks the table even when it changes nothing, and every host runs this setup as it starts).
      const found = await client.query(
        "SELECT 1 FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND column_name = 'run_id'",
        [this.schema, IDEMPOTENCY_TABLE],
      );
      if (!found.rowCount) await client.query(`ALTER TABLE ${this.table} ADD COLUMN IF NOT EXISTS run_id TEXT`);
      await client.query(`CREATE INDEX IF NOT EXISTS ${IDEMPOTENCY_TABLE}_by_thread ON ${this.table} (thread_id)`);
      await client.query(`CREATE INDEX IF NOT EXISTS ${IDEMPOTENCY_TABLE}_by_expiry ON ${this.table} (expires_at)`);
    });
  }

  async claim(scope: string, fingerprint: string, now: number, runningUntil: number, expiresAt: number): Promise<ClaimOutcome> {
    const sql = claimSql(this.table, (n) => `$${n}`);
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
      const claimed = await this.pool.query(sql, [scope, fingerprint, runningUntil, expiresAt, now]);
      if (claimed.rowCount) return { claimed: true };
      const { rows } = await this.pool.query<StoredRow>(
        `SELECT fingerprint, status, body, run_id, expires_at, running_until FROM ${this.table} WHERE scope = $1`,
        [scope],
      );
      if (rows[0]) return { claimed: false, record: recordOf(rows[0]) };
    }
    throw new Error("the idempotency key could not be claimed");
  }

  async complete(scope: string, threadId: string | null, answer: StoredAnswer, expiresAt: number): Promise<void> {
    await this.pool.query(
      `UPDATE ${this.table} SET thread_id = $1, status = $2, body = $3, run_id = $4, expires_at = $5, running_until = NULL WHERE scope = $6`,
      [threadId, answer.status, answer.body, answer.runId, expiresAt, scope],
    );
  }

  async release(scope: string): Promise<void> {
    await this.pool.query(`DELETE FROM ${this.table} WHERE scope = $1`, [scope]);
  }

  async sweep(now: number): Promise<void> {
    await this.pool.query(`DELETE FROM ${this.table} WHERE expires_at <= $1`, [now]);
  }

  async deleteThread(threadId: string): Promise<void> {
    await this.pool.query(`DELETE FROM ${this.table} WHERE thread_id = $1`, [threadId]);
  }
}
