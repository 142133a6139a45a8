import type Database from "better-sqlite3";
import type pg from "pg";
import { withSetupLock } from "./pg-transaction.ts";
import { SqliteCommitGroup } from "./sqlite-commit-group.ts";

/**
 * Named leases in the checkpoint database: at most one holder of a name at a time across every
 * worker and host that shares the database, until its lease runs out (a holder that dies loses it
 * then). The retention sweep takes one, so exactly one sweeper runs, and another takes over when
 * it dies.
 */
export const LEASE_TABLE = "agenthost_leases";

export interface LeaseStore {
  /** Take (or renew) `name` for `holder` until `now + ttlMs`; false while another holder's lease runs. */
  take(name: string, holder: string, ttlMs: number, now: number): Promise<boolean>;
  /** Give the lease up, if `holder` holds it. */
  give(name: string, holder: string): Promise<void>;
}

/** The leases of the memory backend: one process, so one map. */
export class MemoryLeases implements LeaseStore {
  private readonly held = new Map<string, { holder: string; until: number }>();

  async take(name: string, holder: string, ttlMs: number, now: number): Promise<boolean> {
    const current = this.held.get(name);
    if (current && current.holder !== holder && current.until > now) return false;
    this.held.set(name, { holder, until: now + ttlMs });
    return true;
  }

  async give(name: string, holder: string): Promise<void> {
    if (this.held.get(name)?.holder === holder) this.held.delete(name);
  }
}

/** Take a lease in one statement: inserted, or updated when it ran out or is the holder's own; a row back means taken. */
const takeSql = (table: string, p: (n: number) => string) =>
  `INSERT INTO ${table} AS lease (name, holder, expires_at) VALUES (${p(1)}, ${p(2)}, ${p(3)})
ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
WHERE lease.expires_at <= ${p(4)} OR lease.holder = excluded.holder
RETURNING holder`;

export class SqliteLeases implements LeaseStore {
  private readonly takeStmt;
  private readonly giveStmt;

  /** Its writes go through the connection's commit group (sqlite-commit-group.ts). */
  private readonly group: SqliteCommitGroup;

  constructor(db: Database.Database) {
    this.group = SqliteCommitGroup.of(db);
    db.exec(`CREATE TABLE IF NOT EXISTS ${LEASE_TABLE} (name TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at INTEGER NOT NULL)`);
    this.takeStmt = db.prepare(takeSql(LEASE_TABLE, () => "?"));
    this.giveStmt = db.prepare(`DELETE FROM ${LEASE_TABLE} WHERE name = ? AND holder = ?`);
  }

  async take(name: string, holder: string, ttlMs: number, now: number): Promise<boolean> {
    return (await this.group.commit(() => this.takeStmt.get(name, holder, now + ttlMs, now))) !== undefined;
  }

  async give(name: string, holder: string): Promise<void> {
    await this.group.commit(() => this.giveStmt.run(name, holder));
  }
}

export class PostgresLeases implements LeaseStore {
  private readonly table: string;

  constructor(
    private readonly pool: pg.Pool,
    schema: string,
  ) {
    this.table = `"${schema}".${LEASE_TABLE}`;
  }

  async setup(): Promise<void> {
    await withSetupLock(this.pool, `agenthost:leases:${this.table}`, async (client) => {
      await client.query(`CREATE TABLE IF NOT EXISTS ${this.table} (name TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at BIGINT NOT NULL)`);
    });
  }

  async take(name: string, holder: string, ttlMs: number, now: number): Promise<boolean> {
    const { rows } = await this.pool.query(takeSql(this.table, (n) => `$${n}`), [name, holder, now + ttlMs, now]);
    return rows.length > 0;
  }

  async give(name: string, holder: string): Promise<void> {
    await this.pool.query(`DELETE FROM ${this.table} WHERE name = $1 AND holder = $2`, [name, holder]);
  }
}
