import type { ThreadOwner } from "../checkpoints/thread-index.ts";

/**
 * What migration, retention, export and import need from a checkpoint database, so the rules are
 * written once and each backend (filedb-store.ts, serverdb-store.ts) only holds its SQL.
 */

/** The saver's tables: the checkpoint table, the other required tables, and tables older schemas may lack. */
export interface TableLayout {
  readonly checkpoints: string;
  readonly required: readonly string[];
  readonly optional: readonly string[];
}

/** One checkpoint's timestamp as stored: a string when well formed, anything else when not. */
export interface CheckpointTime {
  readonly threadId: string;
  readonly checkpointNs: string;
  readonly checkpointId: string;
  /** The checkpoint's `ts` field; null or undefined when missing or unreadable. */
  readonly ts: unknown;
}

export interface CheckpointStore {
  readonly backend: "filedb" | "serverdb";
  readonly layout: TableLayout;
  /** Extra facts for the report, e.g. the schema. */
  readonly describe: Readonly<Record<string, string>>;
  /**
   * Run `fn` in one transaction. "read" always rolls back (a dry run changes nothing); "write" commits
   * when `fn` resolves and rolls back when it throws.
   */
  transaction<T>(mode: "read" | "write", fn: () => Promise<T>): Promise<T>;
  /** Which of `names` exist. */
  existingTables(names: readonly string[]): Promise<Set<string>>;
  /** Keep other writers out of `tables` until the transaction ends. Write transactions only. */
  lockForWrite(tables: readonly string[]): Promise<void>;
  /** Every distinct thread id in `table`. */
  threadIds(table: string): Promise<string[]>;
  /** Rows per thread id in `table`, for the given ids; ids without rows are absent. */
  countRows(table: string, threadIds: readonly string[]): Promise<Map<string, number>>;
  /** The timestamp of every checkpoint whose thread id starts with `lat:v1:`. */
  canonicalCheckpointTimes(): Promise<CheckpointTime[]>;
  /** Rewrite the thread id of every row of `from` in `table`; returns the rows changed. */
  renameThread(table: string, from: string, to: string): Promise<number>;
  /** The `ts` of every checkpoint of one thread, as stored (see CheckpointTime). */
  checkpointTimesOf(threadId: string): Promise<unknown[]>;
  /**
   * Put a migrated conversation in the service's conversation list (creating its table if this
   * database predates it), with its owner and times; its count and title are filled in by the
   * service when it is first listed. A row the conversation already had (it moved from another
   * owner's key) keeps its summary and times and gets its new owner.
   */
  listThread(threadId: string, owner: ThreadOwner, createdAt: number, updatedAt: number): Promise<void>;
  /** The owner of every conversation in the service's conversation list, by storage key. Only when that table exists. */
  threadOwners(): Promise<Map<string, ThreadOwner>>;
  /** Delete every row of the given threads in `table`; returns the rows deleted. */
  deleteThreads(table: string, threadIds: readonly string[]): Promise<number>;
  close(): Promise<void>;
}
