import type Database from "better-sqlite3";

interface Member {
  readonly write: () => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Group commit for one SQLite connection: the writes asked of it in one tick (by the callback
 * running now and the promise continuations it sets off) share one transaction, committed once, in
 * the order they were asked, as soon as that tick's code is done (process.nextTick).
 *
 * Concurrent runs each write a checkpoint, or their writes, or their run's record, a few times a
 * run; with a transaction each, every commit writes its own WAL frames for the same hot pages (the
 * tables' and indexes' last pages) and takes and drops the file's locks again. Runs started together
 * step in the same ticks, so one commit does for several of them (about ten writes a commit at
 * c=8). The group is committed before the event loop goes on: waiting for the next turn
 * (setImmediate) grouped as well but cost each run more than the commits saved
 * (docs/performance.md).
 *
 * Each member behaves as if it had a transaction of its own. Its promise settles only once the
 * commit holding its statements is done, so a caller that awaits it has what sync durability
 * promises. If anything fails inside the group's transaction (a member's statement, or the commit),
 * the transaction is rolled back and each member runs again in a transaction of its own, so a
 * failure is its member's alone: the others are kept, and what SQLite itself rolls back (a full
 * disk, an I/O error) takes no other member with it. So a member may run twice: it must only run
 * statements (what it computes from them is its result), never change anything outside the
 * database. Members take no savepoints: in WAL mode each savepoint that changes a page journals it
 * to a temporary file first, which cost more than the commits saved.
 *
 * A group that cannot begin (the write lock still held by another connection when the busy timeout
 * ends) rejects every member with the driver's error, as each member's own transaction would have.
 * The transaction is BEGIN IMMEDIATE: the write lock is waited for before any member runs, so no
 * member reads under one snapshot and then finds it stale when it writes.
 */
export class SqliteCommitGroup {
  private static readonly groups = new WeakMap<Database.Database, SqliteCommitGroup>();

  /** The commit group of connection `db`: every store writing through `db` shares it. */
  static of(db: Database.Database): SqliteCommitGroup {
    let group = SqliteCommitGroup.groups.get(db);
    if (!group) SqliteCommitGroup.groups.set(db, (group = new SqliteCommitGroup(db)));
    return group;
  }

  private members: Member[] = [];
  private scheduled = false;
  private readonly begin: Database.Statement;
  private readonly commitStmt: Database.Statement;
  private readonly rollback: Database.Statement;

  private constructor(private readonly db: Database.Database) {
    this.begin = db.prepare("BEGIN IMMEDIATE");
    this.commitStmt = db.prepare("COMMIT");
    this.rollback = db.prepare("ROLLBACK");
  }

  /**
   * Run `write` (synchronous statements on this connection, no transaction of its own, nothing
   * changed outside the database) in the connection's next commit. Resolves with what it returned
   * once that commit is done; rejects with what it threw, its statements undone.
   */
  commit<T>(write: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.members.push({ write, resolve: resolve as (value: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        process.nextTick(() => this.flush());
      }
    });
  }

  /** Commit what is waiting now, without waiting for the tick to end (before the connection closes). */
  flush(): void {
    this.scheduled = false;
    const group = this.members;
    this.members = [];
    if (group.length === 0) return;
    const values = this.transaction(group);
    if (values instanceof Failure) {
      if (values.began && group.length > 1) for (const member of group) this.settle(member, this.transaction([member]));
      else for (const member of group) member.reject(values.error);
      return;
    }
    for (const [i, member] of group.entries()) member.resolve(values[i]);
  }

  private settle(member: Member, outcome: unknown[] | Failure): void {
    if (outcome instanceof Failure) member.reject(outcome.error);
    else member.resolve(outcome[0]);
  }

  /** The members' statements in one transaction: their results once committed, or why not (rolled back). */
  private transaction(members: readonly Member[]): unknown[] | Failure {
    try {
      this.begin.run();
    } catch (error) {
      return new Failure(error, false);
    }
    try {
      const values = members.map((member) => member.write());
      this.commitStmt.run();
      return values;
    } catch (error) {
      if (this.db.inTransaction) {
        try {
          this.rollback.run();
        } catch {
          // Left to SQLite: an open transaction is rolled back when the connection closes.
        }
      }
      return new Failure(error, true);
    }
  }
}

/** A transaction that failed: with what, and whether it had begun (so its members may be tried alone). */
class Failure {
  constructor(
    readonly error: unknown,
    readonly began: boolean,
  ) {}
}

