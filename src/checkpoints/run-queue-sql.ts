import type Database from "better-sqlite3";
import type pg from "pg";
import { withSetupLock } from "./pg-transaction.ts";
import { SqliteCommitGroup } from "./sqlite-commit-group.ts";
import { RUN_QUEUE_TABLE, type NewQueuedRun, type QueuedRun, type RunQueueStore } from "./run-queue.ts";

const COLUMNS = "run_id, user_id, thread_id, seq, state, available_at, lease_owner, lease_until, attempt, caller, base";

interface Row {
  run_id: string;
  user_id: string;
  thread_id: string;
  seq: number | string;
  state: string;
  available_at: number | string;
  lease_owner: string | null;
  lease_until: number | string;
  attempt: number;
  caller: string | Record<string, unknown>;
  base: string | null;
}

function queuedRun(row: Row): QueuedRun {
  return {
    runId: row.run_id,
    userId: row.user_id,
    threadId: row.thread_id,
    seq: Number(row.seq),
    state: row.state as QueuedRun["state"],
    availableAt: Number(row.available_at),
    leaseOwner: row.lease_owner,
    leaseUntil: Number(row.lease_until),
    attempt: Number(row.attempt),
    caller: typeof row.caller === "string" ? (JSON.parse(row.caller) as Record<string, unknown>) : row.caller,
    base: row.base,
  };
}

/**
 * The claimable runs, earliest first, at most `limit` (an SQL expression): queued and due, or
 * running with their lease run out, with no earlier row of their thread left. `p(name)` spells a
 * named parameter.
 */
const claimable = (table: string, p: (name: string) => string, limit: string) => `SELECT c.run_id FROM ${table} AS c
WHERE ((c.state = 'queued' AND c.available_at <= ${p("now")}) OR (c.state = 'running' AND c.lease_until < ${p("now")}))
  AND NOT EXISTS (SELECT 1 FROM ${table} AS o WHERE o.user_id = c.user_id AND o.thread_id = c.thread_id AND o.seq < c.seq)
ORDER BY c.seq LIMIT ${limit}`;

/** Claimed rows in the order their runs were accepted (RETURNING keeps no order). */
const bySeq = (rows: Row[]): QueuedRun[] => rows.map(queuedRun).sort((a, b) => a.seq - b.seq);

/** The queue in the SQLite file: every worker of the host shares it, each claim one write transaction. */
export class SqliteRunQueue implements RunQueueStore {
  private readonly addStmt;
  private readonly claimStmt;
  private readonly renewStmt;
  private readonly startedStmt;
  private readonly releaseStmt;
  private readonly removeStmt;
  private readonly removeOwnedStmt;
  private readonly removeQueuedStmt;
  private readonly onThreadStmt;
  private readonly depthStmt;
  private readonly anyClaimableStmt;

  /** Every write goes through the connection's commit group (sqlite-commit-group.ts); reads run at once. */
  private readonly group: SqliteCommitGroup;

  constructor(db: Database.Database) {
    this.group = SqliteCommitGroup.of(db);
    createSqliteRunQueue(db);
    const table = RUN_QUEUE_TABLE;
    this.addStmt = db.prepare(
      `INSERT INTO ${table} (run_id, user_id, thread_id, state, available_at, lease_owner, lease_until, attempt, caller)
VALUES (?, ?, ?, 'queued', ?, NULL, 0, 0, ?) ON CONFLICT (run_id) DO NOTHING`,
    );
    this.claimStmt = db.prepare(
      `UPDATE ${table} SET state = 'running', lease_owner = @owner, lease_until = @until, attempt = attempt + 1
WHERE run_id IN (${claimable(table, (name) => `@${name}`, "@limit")}) RETURNING ${COLUMNS}`,
    );
    this.startedStmt = db.prepare(`UPDATE ${table} SET base = coalesce(base, ?) WHERE run_id = ? AND lease_owner = ?`);
    this.renewStmt = db.prepare(`UPDATE ${table} SET lease_until = ? WHERE run_id = ? AND state = 'running' AND lease_owner = ?`);
    this.releaseStmt = db.prepare(
      `UPDATE ${table} SET state = 'queued', lease_owner = NULL, lease_until = 0, available_at = ?, attempt = attempt - ? WHERE run_id = ? AND lease_owner = ?`,
    );
    this.removeStmt = db.prepare(`DELETE FROM ${table} WHERE run_id = ?`);
    this.removeOwnedStmt = db.prepare(`DELETE FROM ${table} WHERE run_id = ? AND lease_owner = ?`);
    this.removeQueuedStmt = db.prepare(`DELETE FROM ${table} WHERE run_id = ? AND (state = 'queued' OR base IS NULL)`);
    this.onThreadStmt = db.prepare(`SELECT ${COLUMNS} FROM ${table} WHERE user_id = ? AND thread_id = ? ORDER BY seq`);
    this.depthStmt = db.prepare(`SELECT state, count(*) AS n FROM ${table} GROUP BY state`);
    this.anyClaimableStmt = db.prepare(claimable(table, (name) => `@${name}`, "1")).pluck();
  }

  async add(run: NewQueuedRun): Promise<void> {
    const caller = JSON.stringify(run.caller);
    await this.group.commit(() => this.addStmt.run(run.runId, run.userId, run.threadId, run.availableAt, caller));
  }

  async claim(owner: string, now: number, leaseUntil: number, limit: number): Promise<QueuedRun[]> {
    // Every worker looks every BACKGROUND_POLL_INTERVAL: a read first, so an empty queue never takes
    // the file's write lock from the requests that write.
    if (this.anyClaimableStmt.get({ now }) === undefined) return [];
    return bySeq(await this.group.commit(() => this.claimStmt.all({ owner, until: leaseUntil, now, limit }) as Row[]));
  }

  async started(runId: string, owner: string, base: string): Promise<boolean> {
    return (await this.group.commit(() => this.startedStmt.run(base, runId, owner))).changes > 0;
  }

  async renew(runId: string, owner: string, leaseUntil: number): Promise<boolean> {
    return (await this.group.commit(() => this.renewStmt.run(leaseUntil, runId, owner))).changes > 0;
  }

  async release(runId: string, owner: string, availableAt: number, uncount: boolean): Promise<void> {
    await this.group.commit(() => this.releaseStmt.run(availableAt, uncount ? 1 : 0, runId, owner));
  }

  async remove(runId: string, owner?: string): Promise<boolean> {
    return (await this.group.commit(() => (owner === undefined ? this.removeStmt.run(runId) : this.removeOwnedStmt.run(runId, owner)))).changes > 0;
  }

  async removeQueued(runId: string): Promise<boolean> {
    return (await this.group.commit(() => this.removeQueuedStmt.run(runId))).changes > 0;
  }

  async onThread(userId: string, threadId: string): Promise<QueuedRun[]> {
    return (this.onThreadStmt.all(userId, threadId) as Row[]).map(queuedRun);
  }

  async depth(): Promise<{ queued: number; running: number }> {
    const counts = new Map((this.depthStmt.all() as Array<{ state: string; n: number }>).map((row) => [row.state, Number(row.n)]));
    return { queued: counts.get("queued") ?? 0, running: counts.get("running") ?? 0 };
  }
}

/** The table in a SQLite file. */
export function createSqliteRunQueue(db: Database.Database): void {
  db.exec(`CREATE TABLE IF NOT EXISTS ${RUN_QUEUE_TABLE} (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id TEXT NOT NULL UNIQUE,
  user_id TEXT NOT NULL,
  thread_id TEXT NOT NULL,
  state TEXT NOT NULL,
  available_at INTEGER NOT NULL,
  lease_owner TEXT,
  lease_until INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  caller TEXT NOT NULL,
  base TEXT
)`);
  db.exec(`CREATE INDEX IF NOT EXISTS ${RUN_QUEUE_TABLE}_by_thread ON ${RUN_QUEUE_TABLE} (user_id, thread_id, seq)`);
}

/**
 * The queue in a PostgreSQL schema, shared by every worker of every host: a claim locks the row it
 * takes and skips rows other claims hold (FOR UPDATE SKIP LOCKED), so workers never wait on each other.
 * The candidates are collected into an array first (an InitPlan, run once): as a subquery joined to
 * the update, a plan could scan them again and take more runs, or other ones, than it locked.
 */
export class PostgresRunQueue implements RunQueueStore {
  private readonly table: string;

  constructor(
    private readonly pool: pg.Pool,
    schema: string,
  ) {
    this.table = `"${schema}".${RUN_QUEUE_TABLE}`;
  }

  async setup(): Promise<void> {
    await withSetupLock(this.pool, `agenthost:run-queue:${this.table}`, async (client) => {
      await client.query(`CREATE TABLE IF NOT EXISTS ${this.table} (
  seq BIGSERIAL PRIMARY KEY,
  run_id TEXT COLLATE "C" NOT NULL UNIQUE,
  user_id TEXT COLLATE "C" NOT NULL,
  thread_id TEXT COLLATE "C" NOT NULL,
  state TEXT NOT NULL,
  available_at BIGINT NOT NULL,
  lease_owner TEXT,
  lease_until BIGINT NOT NULL,
  attempt INTEGER NOT NULL,
  caller JSONB NOT NULL,
  base TEXT
)`);
      await client.query(`CREATE INDEX IF NOT EXISTS ${RUN_QUEUE_TABLE}_by_thread ON ${this.table} (user_id, thread_id, seq)`);
    });
  }

  async add(run: NewQueuedRun): Promise<void> {
    await this.pool.query(
      `INSERT INTO ${this.table} (run_id, user_id, thread_id, state, available_at, lease_owner, lease_until, attempt, caller)
VALUES ($1, $2, $3, 'queued', $4, NULL, 0, 0, $5::jsonb) ON CONFLICT (run_id) DO NOTHING`,
      [run.runId, run.userId, run.threadId, run.availableAt, JSON.stringify(run.caller)],
    );
  }

  async claim(owner: string, now: number, leaseUntil: number, limit: number): Promise<QueuedRun[]> {
    const names = ["owner", "until", "now"];
    const candidate = `${claimable(this.table, (name) => `$${names.indexOf(name) + 1}::bigint`, "$4")} FOR UPDATE SKIP LOCKED`;
    const { rows } = await this.pool.query<Row>(
      `UPDATE ${this.table} SET state = 'running', lease_owner = $1, lease_until = $2, attempt = attempt + 1
WHERE run_id = ANY(ARRAY(${candidate})) RETURNING ${COLUMNS}`,
      [owner, leaseUntil, now, limit],
    );
    return bySeq(rows);
  }

  async started(runId: string, owner: string, base: string): Promise<boolean> {
    const result = await this.pool.query(`UPDATE ${this.table} SET base = coalesce(base, $1) WHERE run_id = $2 AND lease_owner = $3`, [base, runId, owner]);
    return (result.rowCount ?? 0) > 0;
  }

  async renew(runId: string, owner: string, leaseUntil: number): Promise<boolean> {
    const result = await this.pool.query(`UPDATE ${this.table} SET lease_until = $1 WHERE run_id = $2 AND state = 'running' AND lease_owner = $3`, [
      leaseUntil,
      runId,
      owner,
    ]);
    return (result.rowCount ?? 0) > 0;
  }

  async release(runId: string, owner: string, availableAt: number, uncount: boolean): Promise<void> {
    await this.pool.query(
      `UPDATE ${this.table} SET state = 'queued', lease_owner = NULL, lease_until = 0, available_at = $1, attempt = attempt - $2 WHERE run_id = $3 AND lease_owner = $4`,
      [availableAt, uncount ? 1 : 0, runId, owner],
    );
  }

  async remove(runId: string, owner?: string): Promise<boolean> {
    const result =
      owner === undefined
        ? await this.pool.query(`DELETE FROM ${this.table} WHERE run_id = $1`, [runId])
        : await this.pool.query(`DELETE FROM ${this.table} WHERE run_id = $1 AND lease_owner = $2`, [runId, owner]);
    return (result.rowCount ?? 0) > 0;
  }

  async removeQueued(runId: string): Promise<boolean> {
    const result = await this.pool.query(`DELETE FROM ${this.table} WHERE run_id = $1 AND (state = 'queued' OR base IS NULL)`, [runId]);
    return (result.rowCount ?? 0) > 0;
  }

  async onThread(userId: string, threadId: string): Promise<QueuedRun[]> {
    const { rows } = await this.pool.query<Row>(`SELECT ${COLUMNS} FROM ${this.table} WHERE user_id = $1 AND thread_id = $2 ORDER BY seq`, [userId, threadId]);
    return rows.map(queuedRun);
  }

  async depth(): Promise<{ queued: number; running: number }> {
    const { rows } = await this.pool.query<{ state: string; n: string }>(`SELECT state, count(*) AS n FROM ${this.table} GROUP BY state`);
    const counts = new Map(rows.map((row) => [row.state, Number(row.n)]));
    return { queued: counts.get("queued") ?? 0, running: counts.get("running") ?? 0 };
  }
}
