import type Database from "better-sqlite3";
import type pg from "pg";
import { withSetupLock } from "./pg-transaction.ts";
import { SqliteCommitGroup } from "./sqlite-commit-group.ts";
import {
  canonicalJson,
  FINISHED,
  jsonCopy,
  PLATFORM_RUN_TABLE,
  PLATFORM_THREAD_TABLE,
  type JsonObject,
  type OpenedThread,
  type PlatformRecords,
  type PlatformRun,
  type PlatformThread,
  type RunBase,
  type RunStatus,
  type RunWithThread,
  type ThreadChanges,
  type ThreadFilters,
  type ThreadSearch,
  type ThreadStatus,
} from "./platform-records.ts";

/**
 * The Platform API's records in the checkpoint database (see platform-records.ts). Unlike every
 * other table of the service they are keyed by (user, public thread id), not by a storage key: a
 * thread exists before any run binds it to an agent, and so before it has a storage key.
 *
 * Metadata is matched key by key for exact JSON equality on every backend. SQLite stores it as JSON
 * text with every object's keys sorted (canonicalJson), so a nested object or array is equal exactly
 * when its text is; PostgreSQL stores JSONB, whose equality is already JSON equality. (LangGraph's
 * own server matches with `@>`, containment, under which a nested filter object also matches a
 * stored object with more keys; here it must be equal, as the interface says.)
 *
 * Sort columns and directions come from the two maps below, never from the caller's text.
 */

const THREAD_COLUMNS = "user_id, thread_id, agent_id, metadata, status, created_at, updated_at, ttl_ms";
const RUN_COLUMNS = "user_id, thread_id, run_id, agent_id, status, metadata, kwargs, multitask_strategy, created_at, updated_at, base";

const SORT_COLUMN: Readonly<Record<ThreadSearch["sortBy"], string>> = {
  thread_id: "thread_id",
  created_at: "created_at",
  updated_at: "updated_at",
  status: "status",
};
const SORT_ORDER: Readonly<Record<ThreadSearch["sortOrder"], string>> = { asc: "ASC", desc: "DESC" };

/** The search's ORDER BY: its column and direction, then thread id ascending, so pages never overlap. */
function orderBy(search: Pick<ThreadSearch, "sortBy" | "sortOrder">): string {
  const first = `${SORT_COLUMN[search.sortBy]} ${SORT_ORDER[search.sortOrder]}`;
  return search.sortBy === "thread_id" ? first : `${first}, thread_id`;
}

/** SQLite's JSON is text, PostgreSQL's JSON is parsed by pg; times are BIGINT strings in PostgreSQL. */
type Json = string | JsonObject;
const parsed = (json: Json): JsonObject => (typeof json === "string" ? (JSON.parse(json) as JsonObject) : json);

interface ThreadRow {
  user_id: string;
  thread_id: string;
  agent_id: string | null;
  metadata: Json;
  status: string;
  created_at: number | string;
  updated_at: number | string;
  ttl_ms: number | string | null;
}

interface RunRow {
  user_id: string;
  thread_id: string;
  run_id: string;
  agent_id: string;
  status: string;
  metadata: Json;
  kwargs: Json;
  multitask_strategy: string;
  created_at: number | string;
  updated_at: number | string;
  /** RunBase as JSON; null until the run starts. */
  base: Json | null;
}

function threadOf(row: ThreadRow): PlatformThread {
  return {
    userId: row.user_id,
    threadId: row.thread_id,
    agentId: row.agent_id,
    metadata: parsed(row.metadata),
    status: row.status as ThreadStatus,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    ttlMs: row.ttl_ms === null ? null : Number(row.ttl_ms),
  };
}

/** The columns of a run's record and its thread's read together: the run's as they are, the thread's named `t_<column>`. */
const RUN_WITH_THREAD_COLUMNS = [
  ...RUN_COLUMNS.split(", ").map((column) => `r.${column}`),
  ...THREAD_COLUMNS.split(", ").map((column) => `t.${column} AS t_${column}`),
].join(", ");

type RunWithThreadRow = RunRow & { [Column in keyof ThreadRow as `t_${Column}`]: ThreadRow[Column] };

function runWithThreadOf(row: RunWithThreadRow): RunWithThread {
  const thread: ThreadRow = {
    user_id: row.t_user_id,
    thread_id: row.t_thread_id,
    agent_id: row.t_agent_id,
    metadata: row.t_metadata,
    status: row.t_status,
    created_at: row.t_created_at,
    updated_at: row.t_updated_at,
    ttl_ms: row.t_ttl_ms,
  };
  return { run: runOf(row), thread: threadOf(thread) };
}

function runOf(row: RunRow): PlatformRun {
  return {
    userId: row.user_id,
    threadId: row.thread_id,
    runId: row.run_id,
    agentId: row.agent_id,
    status: row.status as RunStatus,
    metadata: parsed(row.metadata),
    kwargs: parsed(row.kwargs),
    multitaskStrategy: row.multitask_strategy,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    base: row.base === null ? null : (parsed(row.base) as unknown as RunBase),
  };
}

/** The JSON text of a run's base; null when it has none. */
const baseText = (base: RunBase | null | undefined): string | null => (base ? JSON.stringify(base) : null);

/** A run's values in RUN_COLUMNS order, as putRunSql takes them. */
const runParams = (run: PlatformRun): [string, string, string, string, string, string, string, string, number, number, string | null] => [
  run.userId,
  run.threadId,
  run.runId,
  run.agentId,
  run.status,
  JSON.stringify(run.metadata),
  JSON.stringify(run.kwargs),
  run.multitaskStrategy,
  run.createdAt,
  run.updatedAt,
  baseText(run.base),
];

/** How one backend spells the column types. */
interface Types {
  /** Text that compares and sorts by code point (SQLite's default; PostgreSQL's "C" collation). */
  readonly text: string;
  /** Metadata, matched by searches. */
  readonly json: string;
  /** A run's kwargs: echoed, never searched. */
  readonly document: string;
  /** Milliseconds since the epoch. */
  readonly time: string;
}

/** The two tables and their indexes in `threads` and `runs` (names, quoted and schema-qualified where needed). */
function platformDdl(threads: string, runs: string, t: Types): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${threads} (
  user_id ${t.text} NOT NULL,
  thread_id ${t.text} NOT NULL,
  agent_id ${t.text},
  metadata ${t.json} NOT NULL,
  status ${t.text} NOT NULL,
  created_at ${t.time} NOT NULL,
  updated_at ${t.time} NOT NULL,
  ttl_ms ${t.time},
  PRIMARY KEY (user_id, thread_id)
)`,
    `CREATE INDEX IF NOT EXISTS ${PLATFORM_THREAD_TABLE}_by_updated ON ${threads} (user_id, updated_at DESC, thread_id)`,
    `CREATE TABLE IF NOT EXISTS ${runs} (
  user_id ${t.text} NOT NULL,
  thread_id ${t.text} NOT NULL,
  run_id ${t.text} NOT NULL,
  agent_id ${t.text} NOT NULL,
  status ${t.text} NOT NULL,
  metadata ${t.json} NOT NULL,
  kwargs ${t.document} NOT NULL,
  multitask_strategy ${t.text} NOT NULL,
  created_at ${t.time} NOT NULL,
  updated_at ${t.time} NOT NULL,
  base ${t.document},
  PRIMARY KEY (user_id, thread_id, run_id)
)`,
    `CREATE INDEX IF NOT EXISTS ${PLATFORM_RUN_TABLE}_by_created ON ${runs} (user_id, thread_id, created_at DESC, run_id)`,
    `CREATE INDEX IF NOT EXISTS ${PLATFORM_RUN_TABLE}_by_age ON ${runs} (updated_at)`,
  ];
}

/** The final statuses, as an SQL list. */
const FINISHED_LIST = [...FINISHED].map((status) => `'${status}'`).join(", ");

/** Record a run, replacing what was recorded under its id. */
const putRunSql = (runs: string, p: (n: number) => string) =>
  `INSERT INTO ${runs} (${RUN_COLUMNS}) VALUES (${[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11].map(p).join(", ")})
ON CONFLICT (user_id, thread_id, run_id) DO UPDATE SET agent_id = excluded.agent_id, status = excluded.status,
  metadata = excluded.metadata, kwargs = excluded.kwargs, multitask_strategy = excluded.multitask_strategy,
  created_at = excluded.created_at, updated_at = excluded.updated_at, base = excluded.base`;

/**
 * SQLite's filters, each off while its parameter is NULL, so one statement per order serves every
 * search. Metadata: no wanted key lacks a stored member of the same key, JSON type (an integer and
 * a real are both numbers) and value: the same SQL value for a scalar, the same text for an object
 * or array (both sides canonical). Keys are compared as values, never spliced into a JSON path.
 */
const SQLITE_FILTERS = `thread.user_id = @user
  AND (@status IS NULL OR thread.status = @status)
  AND (@ids IS NULL OR thread.thread_id IN (SELECT value FROM json_each(@ids)))
  AND (@metadata IS NULL OR NOT EXISTS (
    SELECT 1 FROM json_each(@metadata) AS want WHERE NOT EXISTS (
      SELECT 1 FROM json_each(thread.metadata) AS have
      WHERE have.key = want.key
        AND (have.type = want.type OR (have.type IN ('integer', 'real') AND want.type IN ('integer', 'real')))
        AND CASE WHEN have.type IN ('object', 'array') THEN have.value = want.value ELSE have.atom IS want.atom END)))`;

/** The named parameters of SQLITE_FILTERS. */
function sqliteFilters(userId: string, filters: ThreadFilters): Record<string, string | null> {
  return {
    user: userId,
    status: filters.status ?? null,
    ids: filters.ids ? JSON.stringify(filters.ids) : null,
    metadata: filters.metadata ? canonicalJson(filters.metadata) : null,
  };
}

/** The records in the SQLite file, with the connection's prepared statements. */
export class SqlitePlatformRecords implements PlatformRecords {
  private readonly createStmt;
  private readonly expiredStmt;
  private readonly getStmt;
  private readonly updateStmt;
  private readonly deleteRunsStmt;
  private readonly deleteThreadStmt;
  /** One search statement per order ("created_at desc"). */
  private readonly searchStmts = new Map<string, Database.Statement>();
  private readonly countStmt;
  private readonly putRunStmt;
  private readonly setRunStatusStmt;
  private readonly handedBack;
  private readonly getRunStmt;
  private readonly getRunWithThreadStmt;
  private readonly listRunsStmt;
  private readonly deleteRunStmt;
  private readonly deleteFinishedStmt;
  private readonly update;
  private readonly delete;
  private readonly started;
  private readonly ended;
  private openStmt: Database.Statement | undefined;

  /** Every write goes through the connection's commit group (sqlite-commit-group.ts); reads run at once. */
  private readonly group: SqliteCommitGroup;

  constructor(private readonly db: Database.Database) {
    this.group = SqliteCommitGroup.of(db);
    createSqlitePlatformTables(db);
    const threads = PLATFORM_THREAD_TABLE;
    const runs = PLATFORM_RUN_TABLE;
    this.createStmt = db.prepare(
      `INSERT INTO ${threads} (${THREAD_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (user_id, thread_id) DO NOTHING RETURNING ${THREAD_COLUMNS}`,
    );
    this.expiredStmt = db.prepare(
      `SELECT ${THREAD_COLUMNS} FROM ${threads} WHERE updated_at >= @from AND ((ttl_ms IS NOT NULL AND updated_at + ttl_ms <= @now)
  OR (ttl_ms IS NULL AND @fallback IS NOT NULL AND updated_at <= @now - @fallback)) ORDER BY updated_at LIMIT @limit`,
    );
    this.getStmt = db.prepare(`SELECT ${THREAD_COLUMNS} FROM ${threads} WHERE user_id = ? AND thread_id = ?`);
    this.updateStmt = db.prepare(
      `UPDATE ${threads} SET metadata = ?, agent_id = COALESCE(agent_id, ?), status = COALESCE(?, status), updated_at = ?, ttl_ms = COALESCE(?, ttl_ms)
WHERE user_id = ? AND thread_id = ? RETURNING ${THREAD_COLUMNS}`,
    );
    this.deleteRunsStmt = db.prepare(`DELETE FROM ${runs} WHERE user_id = ? AND thread_id = ?`);
    this.deleteThreadStmt = db.prepare(`DELETE FROM ${threads} WHERE user_id = ? AND thread_id = ?`);
    for (const sortBy of Object.keys(SORT_COLUMN) as Array<ThreadSearch["sortBy"]>) {
      for (const sortOrder of Object.keys(SORT_ORDER) as Array<ThreadSearch["sortOrder"]>) {
        const sql = `SELECT ${THREAD_COLUMNS} FROM ${threads} AS thread WHERE ${SQLITE_FILTERS}
ORDER BY ${orderBy({ sortBy, sortOrder })} LIMIT @limit OFFSET @offset`;
        this.searchStmts.set(`${sortBy} ${sortOrder}`, db.prepare(sql));
      }
    }
    this.countStmt = db.prepare(`SELECT count(*) FROM ${threads} AS thread WHERE ${SQLITE_FILTERS}`).pluck();
    this.putRunStmt = db.prepare(putRunSql(runs, () => "?"));
    this.setRunStatusStmt = db.prepare(
      `UPDATE ${runs} SET status = ?, updated_at = ?, base = COALESCE(base, ?) WHERE user_id = ? AND thread_id = ? AND run_id = ? RETURNING ${RUN_COLUMNS}`,
    );
    this.getRunStmt = db.prepare(`SELECT ${RUN_COLUMNS} FROM ${runs} WHERE user_id = ? AND thread_id = ? AND run_id = ?`);
    this.getRunWithThreadStmt = db.prepare(
      `SELECT ${RUN_WITH_THREAD_COLUMNS} FROM ${runs} AS r JOIN ${threads} AS t ON t.user_id = r.user_id AND t.thread_id = r.thread_id
WHERE r.user_id = ? AND r.thread_id = ? AND r.run_id = ?`,
    );
    this.listRunsStmt = db.prepare(
      `SELECT ${RUN_COLUMNS} FROM ${runs} WHERE user_id = @user AND thread_id = @thread AND (@status IS NULL OR status = @status)
ORDER BY created_at DESC, run_id LIMIT @limit OFFSET @offset`,
    );
    this.deleteRunStmt = db.prepare(`DELETE FROM ${runs} WHERE user_id = ? AND thread_id = ? AND run_id = ?`);
    this.deleteFinishedStmt = db.prepare(
      `DELETE FROM ${runs} WHERE rowid IN (SELECT rowid FROM ${runs} WHERE status IN (${FINISHED_LIST}) AND updated_at < ? LIMIT ?)`,
    );
    // Read, merge in JavaScript (json_patch would delete a key set to null), write: in the group's
    // transaction, which takes the write lock first, so another worker's update cannot come in between.
    this.update = (userId: string, threadId: string, changes: ThreadChanges): ThreadRow | undefined => {
      const row = this.getStmt.get(userId, threadId) as ThreadRow | undefined;
      if (!row) return undefined;
      const metadata = changes.metadata ? canonicalJson({ ...parsed(row.metadata), ...jsonCopy(changes.metadata) }) : row.metadata;
      return this.updateStmt.get(metadata, changes.agentId ?? null, changes.status ?? null, changes.now, changes.ttlMs ?? null, userId, threadId) as ThreadRow;
    };
    const runStatusStmt = db.prepare(`UPDATE ${runs} SET status = ?, updated_at = ?, base = COALESCE(base, ?) WHERE user_id = ? AND thread_id = ? AND run_id = ?`);
    const threadStatusStmt = db.prepare(`UPDATE ${threads} SET status = ?, updated_at = ? WHERE user_id = ? AND thread_id = ?`);
    // A run accepted earlier is set running with its base; one that was not is written whole.
    this.started = (run: PlatformRun, written: { readonly base: string | null } | { readonly row: ReturnType<typeof runParams> }): void => {
      if ("row" in written) this.putRunStmt.run(...written.row);
      else runStatusStmt.run("running", run.updatedAt, written.base, run.userId, run.threadId, run.runId);
      threadStatusStmt.run("busy", run.updatedAt, run.userId, run.threadId);
    };
    this.ended = (userId: string, threadId: string, runId: string, status: RunStatus, threadStatus: ThreadStatus, now: number): void => {
      runStatusStmt.run(status, now, null, userId, threadId, runId);
      threadStatusStmt.run(threadStatus, now, userId, threadId);
    };
    const handedBackStmt = db.prepare(
      `UPDATE ${runs} SET status = 'pending', updated_at = ? WHERE user_id = ? AND thread_id = ? AND run_id = ? AND status NOT IN (${FINISHED_LIST})`,
    );
    this.handedBack = (userId: string, threadId: string, runId: string, now: number): boolean => {
      const before = this.getRunStmt.get(userId, threadId, runId) as RunRow | undefined;
      if (handedBackStmt.run(now, userId, threadId, runId).changes === 0) return false;
      // Only a run that started made its thread busy; one that never did leaves it as it was.
      if (before?.status === "running") threadStatusStmt.run("idle", now, userId, threadId);
      return true;
    };
    this.delete = (userId: string, threadId: string): boolean => {
      this.deleteRunsStmt.run(userId, threadId);
      return this.deleteThreadStmt.run(userId, threadId).changes > 0;
    };
  }

  async createThread(thread: Omit<PlatformThread, "updatedAt">): Promise<PlatformThread | undefined> {
    const { userId, threadId, agentId, metadata, status, createdAt } = thread;
    const params = [userId, threadId, agentId, canonicalJson(metadata), status, createdAt, createdAt, thread.ttlMs ?? null];
    const row = (await this.group.commit(() => this.createStmt.get(params))) as ThreadRow | undefined;
    return row && threadOf(row);
  }

  async expiredThreads(now: number, defaultTtlMs: number | null, from: number, limit: number): Promise<PlatformThread[]> {
    return (this.expiredStmt.all({ now, fallback: defaultTtlMs, from, limit }) as ThreadRow[]).map(threadOf);
  }

  async getThread(userId: string, threadId: string): Promise<PlatformThread | undefined> {
    const row = this.getStmt.get(userId, threadId) as ThreadRow | undefined;
    return row && threadOf(row);
  }

  async openThread(thread: Omit<PlatformThread, "updatedAt">, conversationKeys: readonly string[]): Promise<OpenedThread | undefined> {
    const { userId, threadId, agentId, metadata, status, createdAt } = thread;
    const found = this.getStmt.get(userId, threadId) as ThreadRow | undefined;
    if (found) return { thread: threadOf(found), created: false };
    // Prepared at first use: the library's saver creates the checkpoints table on its own first use.
    this.openStmt ??= this.db.prepare(
      `INSERT INTO ${PLATFORM_THREAD_TABLE} (${THREAD_COLUMNS}) SELECT ?, ?, ?, ?, ?, ?, ?, ?
WHERE NOT EXISTS (SELECT 1 FROM checkpoints WHERE checkpoint_ns = '' AND thread_id IN (SELECT value FROM json_each(?)))
ON CONFLICT (user_id, thread_id) DO NOTHING RETURNING ${THREAD_COLUMNS}`,
    );
    const open = this.openStmt;
    const params = [userId, threadId, agentId, canonicalJson(metadata), status, createdAt, createdAt, thread.ttlMs ?? null, JSON.stringify(conversationKeys)];
    const row = (await this.group.commit(() => open.get(params))) as ThreadRow | undefined;
    return row && { thread: threadOf(row), created: true };
  }

  async updateThread(userId: string, threadId: string, changes: ThreadChanges): Promise<PlatformThread | undefined> {
    const row = await this.group.commit(() => this.update(userId, threadId, changes));
    return row && threadOf(row);
  }

  async deleteThread(userId: string, threadId: string): Promise<boolean> {
    return this.group.commit(() => this.delete(userId, threadId));
  }

  async searchThreads(userId: string, search: ThreadSearch): Promise<PlatformThread[]> {
    const statement = this.searchStmts.get(`${search.sortBy} ${search.sortOrder}`);
    if (!statement) throw new Error(`no thread order ${search.sortBy} ${search.sortOrder}`);
    const rows = statement.all({ ...sqliteFilters(userId, search), limit: search.limit, offset: search.offset }) as ThreadRow[];
    return rows.map(threadOf);
  }

  async countThreads(userId: string, search: ThreadFilters): Promise<number> {
    return this.countStmt.get(sqliteFilters(userId, search)) as number;
  }

  async putRun(run: PlatformRun): Promise<void> {
    const params = runParams(run);
    await this.group.commit(() => this.putRunStmt.run(...params));
  }

  async runStarted(run: PlatformRun, accepted: boolean): Promise<void> {
    // Serialised before the commit, so the write lock is not held for it.
    const written = accepted ? { base: baseText(run.base) } : { row: runParams(run) };
    await this.group.commit(() => this.started(run, written));
  }

  async runEnded(userId: string, threadId: string, runId: string, status: RunStatus, threadStatus: ThreadStatus, now: number): Promise<void> {
    await this.group.commit(() => this.ended(userId, threadId, runId, status, threadStatus, now));
  }

  async runHandedBack(userId: string, threadId: string, runId: string, now: number): Promise<boolean> {
    return this.group.commit(() => this.handedBack(userId, threadId, runId, now));
  }

  async setRunStatus(userId: string, threadId: string, runId: string, status: RunStatus, now: number, base?: RunBase): Promise<PlatformRun | undefined> {
    const baseJson = baseText(base);
    const row = (await this.group.commit(() => this.setRunStatusStmt.get(status, now, baseJson, userId, threadId, runId))) as RunRow | undefined;
    return row && runOf(row);
  }

  async getRun(userId: string, threadId: string, runId: string): Promise<PlatformRun | undefined> {
    const row = this.getRunStmt.get(userId, threadId, runId) as RunRow | undefined;
    return row && runOf(row);
  }

  async getRunWithThread(userId: string, threadId: string, runId: string): Promise<RunWithThread | undefined> {
    const row = this.getRunWithThreadStmt.get(userId, threadId, runId) as RunWithThreadRow | undefined;
    return row && runWithThreadOf(row);
  }

  async deleteFinishedRuns(cutoff: number, limit: number): Promise<number> {
    return (await this.group.commit(() => this.deleteFinishedStmt.run(cutoff, limit))).changes;
  }

  async listRuns(userId: string, threadId: string, page: { readonly offset: number; readonly limit: number; readonly status?: RunStatus }): Promise<PlatformRun[]> {
    const rows = this.listRunsStmt.all({ user: userId, thread: threadId, status: page.status ?? null, limit: page.limit, offset: page.offset }) as RunRow[];
    return rows.map(runOf);
  }

  async deleteRun(userId: string, threadId: string, runId: string): Promise<boolean> {
    return (await this.group.commit(() => this.deleteRunStmt.run(userId, threadId, runId))).changes > 0;
  }
}

/** The tables in a SQLite file. */
export function createSqlitePlatformTables(db: Database.Database): void {
  const types: Types = { text: "TEXT", json: "TEXT", document: "TEXT", time: "INTEGER" };
  for (const statement of platformDdl(PLATFORM_THREAD_TABLE, PLATFORM_RUN_TABLE, types)) db.exec(statement);
  // Records of the release before rollback and thread TTLs have no base and ttl_ms columns.
  const columns = (table: string) => db.prepare(`SELECT name FROM pragma_table_info('${table}')`).pluck().all() as string[];
  if (!columns(PLATFORM_RUN_TABLE).includes("base")) db.exec(`ALTER TABLE ${PLATFORM_RUN_TABLE} ADD COLUMN base TEXT`);
  if (!columns(PLATFORM_THREAD_TABLE).includes("ttl_ms")) db.exec(`ALTER TABLE ${PLATFORM_THREAD_TABLE} ADD COLUMN ttl_ms INTEGER`);
  db.exec(`CREATE INDEX IF NOT EXISTS ${PLATFORM_THREAD_TABLE}_by_age ON ${PLATFORM_THREAD_TABLE} (updated_at)`);
}

/**
 * The tables in a PostgreSQL schema (quoted), under the caller's transaction. Text columns use the
 * "C" collation, so sorting by thread id or status gives the order SQLite and memory give. A run's
 * kwargs are JSON, kept as text: they carry the caller's input, which may hold a \u0000 that JSONB
 * refuses, and they are never searched.
 */
export async function createPostgresPlatformTables(client: pg.ClientBase, schema: string): Promise<void> {
  const types: Types = { text: 'TEXT COLLATE "C"', json: "JSONB", document: "JSON", time: "BIGINT" };
  for (const statement of platformDdl(`"${schema}".${PLATFORM_THREAD_TABLE}`, `"${schema}".${PLATFORM_RUN_TABLE}`, types)) await client.query(statement);
  // Records of the release before rollback and thread TTLs have no base and ttl_ms columns.
  await client.query(`ALTER TABLE "${schema}".${PLATFORM_RUN_TABLE} ADD COLUMN IF NOT EXISTS base ${types.document}`);
  await client.query(`ALTER TABLE "${schema}".${PLATFORM_THREAD_TABLE} ADD COLUMN IF NOT EXISTS ttl_ms BIGINT`);
  await client.query(`CREATE INDEX IF NOT EXISTS ${PLATFORM_THREAD_TABLE}_by_age ON "${schema}".${PLATFORM_THREAD_TABLE} (updated_at)`);
}

/**
 * PostgreSQL's filters after `user_id = $1`, each appending its parameter to `params`. Metadata: no
 * wanted key whose stored member is missing or not equal as JSONB (a key is a value here too).
 */
function postgresFilters(userId: string, filters: ThreadFilters): { where: string; params: unknown[] } {
  const params: unknown[] = [userId];
  const where = ["thread.user_id = $1"];
  if (filters.status !== undefined) {
    params.push(filters.status);
    where.push(`thread.status = $${params.length}`);
  }
  if (filters.ids) {
    params.push(filters.ids);
    where.push(`thread.thread_id = ANY($${params.length}::text[])`);
  }
  if (filters.metadata) {
    params.push(JSON.stringify(filters.metadata));
    where.push(`NOT EXISTS (SELECT 1 FROM jsonb_each($${params.length}::jsonb) AS want WHERE thread.metadata -> want.key IS DISTINCT FROM want.value)`);
  }
  return { where: where.join(" AND "), params };
}

/** The records in a PostgreSQL schema, through the worker's pool. */
export class PostgresPlatformRecords implements PlatformRecords {
  private readonly threads: string;
  private readonly runs: string;

  constructor(
    private readonly pool: pg.Pool,
    private readonly schema: string,
  ) {
    this.threads = `"${schema}".${PLATFORM_THREAD_TABLE}`;
    this.runs = `"${schema}".${PLATFORM_RUN_TABLE}`;
  }

  async setup(): Promise<void> {
    await withSetupLock(this.pool, `agenthost:platform:${this.threads}`, (client) => createPostgresPlatformTables(client, this.schema));
  }

  async createThread(thread: Omit<PlatformThread, "updatedAt">): Promise<PlatformThread | undefined> {
    const { rows } = await this.pool.query<ThreadRow>(
      `INSERT INTO ${this.threads} (${THREAD_COLUMNS}) VALUES ($1, $2, $3, $4::jsonb, $5, $6, $6, $7)
ON CONFLICT (user_id, thread_id) DO NOTHING RETURNING ${THREAD_COLUMNS}`,
      [thread.userId, thread.threadId, thread.agentId, JSON.stringify(thread.metadata), thread.status, thread.createdAt, thread.ttlMs ?? null],
    );
    return rows[0] && threadOf(rows[0]);
  }

  async expiredThreads(now: number, defaultTtlMs: number | null, from: number, limit: number): Promise<PlatformThread[]> {
    const { rows } = await this.pool.query<ThreadRow>(
      `SELECT ${THREAD_COLUMNS} FROM ${this.threads} WHERE updated_at >= $4 AND ((ttl_ms IS NOT NULL AND updated_at + ttl_ms <= $1)
  OR (ttl_ms IS NULL AND $2::bigint IS NOT NULL AND updated_at <= $1 - $2::bigint)) ORDER BY updated_at LIMIT $3`,
      [now, defaultTtlMs, limit, from],
    );
    return rows.map(threadOf);
  }

  async getThread(userId: string, threadId: string): Promise<PlatformThread | undefined> {
    const { rows } = await this.pool.query<ThreadRow>(`SELECT ${THREAD_COLUMNS} FROM ${this.threads} WHERE user_id = $1 AND thread_id = $2`, [
      userId,
      threadId,
    ]);
    return rows[0] && threadOf(rows[0]);
  }

  async openThread(thread: Omit<PlatformThread, "updatedAt">, conversationKeys: readonly string[]): Promise<OpenedThread | undefined> {
    // One statement: the record found, else inserted when no conversation has a checkpoint under
    // one of the keys; no row when there is one, or another request inserted the record meanwhile.
    const { rows } = await this.pool.query<ThreadRow & { created: boolean }>(
      `WITH found AS (SELECT ${THREAD_COLUMNS} FROM ${this.threads} WHERE user_id = $1 AND thread_id = $2),
made AS (
  INSERT INTO ${this.threads} (${THREAD_COLUMNS}) SELECT $1, $2, $3, $4::jsonb, $5, $6, $6, $7
  WHERE NOT EXISTS (SELECT 1 FROM found)
    AND NOT EXISTS (SELECT 1 FROM "${this.schema}".checkpoints WHERE thread_id = ANY($8::text[]) AND checkpoint_ns = '')
  ON CONFLICT (user_id, thread_id) DO NOTHING RETURNING ${THREAD_COLUMNS})
SELECT true AS created, ${THREAD_COLUMNS} FROM made UNION ALL SELECT false AS created, ${THREAD_COLUMNS} FROM found`,
      [thread.userId, thread.threadId, thread.agentId, JSON.stringify(thread.metadata), thread.status, thread.createdAt, thread.ttlMs ?? null, conversationKeys],
    );
    return rows[0] && { thread: threadOf(rows[0]), created: rows[0].created };
  }

  async updateThread(userId: string, threadId: string, changes: ThreadChanges): Promise<PlatformThread | undefined> {
    // `||` merges the top-level keys; a key set to null is stored as JSON null.
    const { rows } = await this.pool.query<ThreadRow>(
      `UPDATE ${this.threads} SET metadata = metadata || $3::jsonb, agent_id = COALESCE(agent_id, $4), status = COALESCE($5, status), updated_at = $6,
  ttl_ms = COALESCE($7, ttl_ms)
WHERE user_id = $1 AND thread_id = $2 RETURNING ${THREAD_COLUMNS}`,
      [userId, threadId, JSON.stringify(changes.metadata ?? {}), changes.agentId ?? null, changes.status ?? null, changes.now, changes.ttlMs ?? null],
    );
    return rows[0] && threadOf(rows[0]);
  }

  async deleteThread(userId: string, threadId: string): Promise<boolean> {
    // One statement, so one transaction: the runs go with their thread.
    const result = await this.pool.query(
      `WITH runs AS (DELETE FROM ${this.runs} WHERE user_id = $1 AND thread_id = $2)
DELETE FROM ${this.threads} WHERE user_id = $1 AND thread_id = $2`,
      [userId, threadId],
    );
    return (result.rowCount ?? 0) > 0;
  }

  async searchThreads(userId: string, search: ThreadSearch): Promise<PlatformThread[]> {
    const { where, params } = postgresFilters(userId, search);
    params.push(search.limit, search.offset);
    const { rows } = await this.pool.query<ThreadRow>(
      `SELECT ${THREAD_COLUMNS} FROM ${this.threads} AS thread WHERE ${where}
ORDER BY ${orderBy(search)} LIMIT $${params.length - 1} OFFSET $${params.length}`,
      params,
    );
    return rows.map(threadOf);
  }

  async countThreads(userId: string, search: ThreadFilters): Promise<number> {
    const { where, params } = postgresFilters(userId, search);
    const { rows } = await this.pool.query<{ total: string }>(`SELECT count(*) AS total FROM ${this.threads} AS thread WHERE ${where}`, params);
    return Number(rows[0]?.total ?? 0);
  }

  async putRun(run: PlatformRun): Promise<void> {
    await this.pool.query(putRunSql(this.runs, (n) => `$${n}`), runParams(run));
  }

  async runStarted(run: PlatformRun, accepted: boolean): Promise<void> {
    // One statement, so one transaction and one round trip: the run's write, then its thread's.
    if (accepted) {
      await this.pool.query(
        `WITH run AS (UPDATE ${this.runs} SET status = 'running', updated_at = $4, base = COALESCE(base, $5) WHERE user_id = $1 AND thread_id = $2 AND run_id = $3)
UPDATE ${this.threads} SET status = 'busy', updated_at = $4 WHERE user_id = $1 AND thread_id = $2`,
        [run.userId, run.threadId, run.runId, run.updatedAt, baseText(run.base)],
      );
    } else {
      await this.pool.query(
        `WITH run AS (${putRunSql(this.runs, (n) => `$${n}`)})
UPDATE ${this.threads} SET status = 'busy', updated_at = $10 WHERE user_id = $1 AND thread_id = $2`,
        runParams(run),
      );
    }
  }

  async runEnded(userId: string, threadId: string, runId: string, status: RunStatus, threadStatus: ThreadStatus, now: number): Promise<void> {
    await this.pool.query(
      `WITH run AS (UPDATE ${this.runs} SET status = $4, updated_at = $5 WHERE user_id = $1 AND thread_id = $2 AND run_id = $3)
UPDATE ${this.threads} SET status = $6, updated_at = $5 WHERE user_id = $1 AND thread_id = $2`,
      [userId, threadId, runId, status, now, threadStatus],
    );
  }

  async runHandedBack(userId: string, threadId: string, runId: string, now: number): Promise<boolean> {
    // One statement: the run pending again unless its status is final; its thread idle if the run had
    // started (only then did it make the thread busy). Both CTEs see the run as it was before.
    const { rows } = await this.pool.query<{ handed: number }>(
      `WITH before AS (SELECT status FROM ${this.runs} WHERE user_id = $1 AND thread_id = $2 AND run_id = $3),
run AS (UPDATE ${this.runs} SET status = 'pending', updated_at = $4
  WHERE user_id = $1 AND thread_id = $2 AND run_id = $3 AND status NOT IN (${FINISHED_LIST}) RETURNING 1),
thread AS (UPDATE ${this.threads} SET status = 'idle', updated_at = $4 WHERE user_id = $1 AND thread_id = $2
  AND EXISTS (SELECT 1 FROM run) AND EXISTS (SELECT 1 FROM before WHERE status = 'running'))
SELECT count(*)::int AS handed FROM run`,
      [userId, threadId, runId, now],
    );
    return (rows[0]?.handed ?? 0) > 0;
  }

  async setRunStatus(userId: string, threadId: string, runId: string, status: RunStatus, now: number, base?: RunBase): Promise<PlatformRun | undefined> {
    const { rows } = await this.pool.query<RunRow>(
      `UPDATE ${this.runs} SET status = $4, updated_at = $5, base = COALESCE(base, $6) WHERE user_id = $1 AND thread_id = $2 AND run_id = $3 RETURNING ${RUN_COLUMNS}`,
      [userId, threadId, runId, status, now, baseText(base)],
    );
    return rows[0] && runOf(rows[0]);
  }

  async getRun(userId: string, threadId: string, runId: string): Promise<PlatformRun | undefined> {
    const { rows } = await this.pool.query<RunRow>(`SELECT ${RUN_COLUMNS} FROM ${this.runs} WHERE user_id = $1 AND thread_id = $2 AND run_id = $3`, [
      userId,
      threadId,
      runId,
    ]);
    return rows[0] && runOf(rows[0]);
  }

  async getRunWithThread(userId: string, threadId: string, runId: string): Promise<RunWithThread | undefined> {
    const { rows } = await this.pool.query<RunWithThreadRow>(
      `SELECT ${RUN_WITH_THREAD_COLUMNS} FROM ${this.runs} AS r JOIN ${this.threads} AS t ON t.user_id = r.user_id AND t.thread_id = r.thread_id
WHERE r.user_id = $1 AND r.thread_id = $2 AND r.run_id = $3`,
      [userId, threadId, runId],
    );
    return rows[0] && runWithThreadOf(rows[0]);
  }

  async listRuns(userId: string, threadId: string, page: { readonly offset: number; readonly limit: number; readonly status?: RunStatus }): Promise<PlatformRun[]> {
    const { rows } = await this.pool.query<RunRow>(
      `SELECT ${RUN_COLUMNS} FROM ${this.runs} WHERE user_id = $1 AND thread_id = $2 AND ($3::text IS NULL OR status = $3)
ORDER BY created_at DESC, run_id LIMIT $4 OFFSET $5`,
      [userId, threadId, page.status ?? null, page.limit, page.offset],
    );
    return rows.map(runOf);
  }

  async deleteFinishedRuns(cutoff: number, limit: number): Promise<number> {
    const result = await this.pool.query(
      `DELETE FROM ${this.runs} WHERE ctid IN (SELECT ctid FROM ${this.runs} WHERE status IN (${FINISHED_LIST}) AND updated_at < $1 LIMIT $2)`,
      [cutoff, limit],
    );
    return result.rowCount ?? 0;
  }

  async deleteRun(userId: string, threadId: string, runId: string): Promise<boolean> {
    const result = await this.pool.query(`DELETE FROM ${this.runs} WHERE user_id = $1 AND thread_id = $2 AND run_id = $3`, [userId, threadId, runId]);
    return (result.rowCount ?? 0) > 0;
  }
}
