/**
 * The LangGraph Platform API's own records, kept in the checkpoint database beside the
 * conversations: its threads (a thread exists before its first run, carries metadata and a status,
 * and is bound to an agent by its first run) and its runs (id, status, times). A Platform thread of
 * user U bound to agent A is the conversation (U, A, thread_id) of agenthost's own API: its
 * checkpoints live under that conversation's storage key; these rows only add what the Platform
 * API names. Every read and write is scoped to one user: another user's thread does not exist.
 */
import type { LatestCheckpoints } from "./latest-checkpoints.ts";

export const PLATFORM_THREAD_TABLE = "agenthost_platform_threads";
export const PLATFORM_RUN_TABLE = "agenthost_platform_runs";

/** A thread's status as the Platform API names it. */
export type ThreadStatus = "idle" | "busy" | "interrupted" | "error";

/** A run's status as the Platform API names it. */
export type RunStatus = "pending" | "running" | "success" | "error" | "timeout" | "interrupted";

/** Top-level JSON object; values are any JSON. */
export type JsonObject = Record<string, unknown>;

export interface PlatformThread {
  readonly userId: string;
  /** The public thread id (a UUID unless the caller chose one). */
  readonly threadId: string;
  /** The agent its first run bound it to; null before. */
  readonly agentId: string | null;
  readonly metadata: JsonObject;
  readonly status: ThreadStatus;
  /** Milliseconds since the epoch. */
  readonly createdAt: number;
  readonly updatedAt: number;
  /** Its own time to live (the Platform API's `ttl`), in milliseconds after its last update; null: CONVERSATION_TTL's. */
  readonly ttlMs?: number | null;
}

export interface ThreadSearch {
  /** Every top-level key must be present with a JSON-equal value. */
  readonly metadata?: JsonObject;
  readonly status?: ThreadStatus;
  /** Only these thread ids. */
  readonly ids?: readonly string[];
  readonly sortBy: "thread_id" | "created_at" | "updated_at" | "status";
  readonly sortOrder: "asc" | "desc";
  readonly offset: number;
  readonly limit: number;
}

export interface ThreadChanges {
  /** Merged into the stored metadata, key by key (a key set to null is stored as null). */
  readonly metadata?: JsonObject;
  /** Binds the thread to an agent when it has none; a thread bound to another agent is left as it is. */
  readonly agentId?: string;
  readonly status?: ThreadStatus;
  /** A new time to live (see PlatformThread.ttlMs); absent: unchanged. */
  readonly ttlMs?: number;
  readonly now: number;
}

/**
 * Where a run started, noted as it first starts: the thread's latest checkpoint then (null: the
 * thread had none) and that checkpoint's pending writes as (task id, channel). A rollback takes the
 * thread back to it.
 */
export interface RunBase {
  readonly checkpointId: string | null;
  readonly writes: ReadonlyArray<readonly [string, string]>;
}

export interface PlatformRun {
  readonly userId: string;
  readonly threadId: string;
  readonly runId: string;
  readonly agentId: string;
  readonly status: RunStatus;
  readonly metadata: JsonObject;
  /** The run's request as the Platform API echoes it (`kwargs`): input, command, config, stream modes. */
  readonly kwargs: JsonObject;
  readonly multitaskStrategy: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** Where it started; null (or absent) until it has. */
  readonly base?: RunBase | null;
}

/** A run's record and its thread's, read together. */
export interface RunWithThread {
  readonly run: PlatformRun;
  readonly thread: PlatformThread;
}

/** A thread PlatformRecords.openThread found (created: false) or recorded (created: true). */
export interface OpenedThread {
  readonly thread: PlatformThread;
  readonly created: boolean;
}

export interface PlatformRecords {
  /** Create a thread; undefined when the user already has one with this id (nothing is changed). */
  createThread(thread: Omit<PlatformThread, "updatedAt">): Promise<PlatformThread | undefined>;
  getThread(userId: string, threadId: string): Promise<PlatformThread | undefined>;
  /**
   * The user's thread `thread.threadId` for a run that creates it when it is missing: its record
   * (created: false), or `thread` recorded now (created: true) unless a conversation is stored under
   * one of `conversationKeys` (the thread id's storage keys). Undefined in that case, and when
   * another request created the record meanwhile: the caller looks the thread up. One statement on
   * a database.
   */
  openThread(thread: Omit<PlatformThread, "updatedAt">, conversationKeys: readonly string[]): Promise<OpenedThread | undefined>;
  /** Apply `changes`; undefined when the user has no such thread. */
  updateThread(userId: string, threadId: string, changes: ThreadChanges): Promise<PlatformThread | undefined>;
  /** Delete the thread and its runs' records; false when the user had no such thread. */
  deleteThread(userId: string, threadId: string): Promise<boolean>;
  /** One page of the user's threads. */
  searchThreads(userId: string, search: ThreadSearch): Promise<PlatformThread[]>;
  /** How many of the user's threads match (paging ignored). */
  countThreads(userId: string, search: Omit<ThreadSearch, "sortBy" | "sortOrder" | "offset" | "limit">): Promise<number>;
  /**
   * Up to `limit` threads of any user whose time to live ran out by `now`: their own `ttlMs`, or
   * `defaultTtlMs` (null: none) for those without one; last updated at or after `from`, least
   * recently updated first (retention).
   */
  expiredThreads(now: number, defaultTtlMs: number | null, from: number, limit: number): Promise<PlatformThread[]>;

  /** Record a run (its thread's record exists). */
  putRun(run: PlatformRun): Promise<void>;
  /**
   * Set a run's status (and updatedAt), and its base when given and it has none yet (a run started
   * again keeps the base of its first start); undefined when the user has no such run on that thread.
   */
  setRunStatus(userId: string, threadId: string, runId: string, status: RunStatus, now: number, base?: RunBase): Promise<PlatformRun | undefined>;
  /**
   * A run starts, in one transaction: its record (`run`, written whole; or, for a run `accepted`
   * earlier and recorded then, only its status `running`, its time and its base, as setRunStatus
   * sets them) and its thread `busy` as of the run's updatedAt.
   */
  runStarted(run: PlatformRun, accepted: boolean): Promise<void>;
  /** A run ends, in one transaction: its status and time, and its thread's status after it. */
  runEnded(userId: string, threadId: string, runId: string, status: RunStatus, threadStatus: ThreadStatus, now: number): Promise<void>;
  /**
   * A background run goes back to its queue (its worker drains): `pending` again and, if it had
   * started (and so made its thread busy), its thread `idle`, in one write; unless the run reached a
   * final status meanwhile: then nothing changes, and false (also when there is no such run).
   */
  runHandedBack(userId: string, threadId: string, runId: string, now: number): Promise<boolean>;
  getRun(userId: string, threadId: string, runId: string): Promise<PlatformRun | undefined>;
  /** A run's record and its thread's, in one read; undefined when the user has no such run on that thread. */
  getRunWithThread(userId: string, threadId: string, runId: string): Promise<RunWithThread | undefined>;
  /** The thread's runs, newest first; `status` filters. */
  listRuns(userId: string, threadId: string, page: { readonly offset: number; readonly limit: number; readonly status?: RunStatus }): Promise<PlatformRun[]>;
  /** Delete one run's record; false when there was none. */
  deleteRun(userId: string, threadId: string, runId: string): Promise<boolean>;
  /** Delete up to `limit` records of finished runs last updated before `cutoff` (retention); how many went. */
  deleteFinishedRuns(cutoff: number, limit: number): Promise<number>;
}

/** The statuses a run ends with. */
export const FINISHED: ReadonlySet<RunStatus> = new Set(["success", "error", "timeout", "interrupted"]);

/** What a search filters on (its paging and order aside). */
export type ThreadFilters = Omit<ThreadSearch, "sortBy" | "sortOrder" | "offset" | "limit">;

/** A value as JSON would carry it: undefined members dropped, dates as strings, a fresh copy. */
export function jsonCopy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/**
 * The JSON text of `value` with every object's keys sorted, so two JSON-equal values have the same
 * text whatever order their keys came in. Objects are rebuilt with Object.fromEntries (never by
 * assignment), so a key named `__proto__` stays a key.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, member: unknown) =>
    member !== null && typeof member === "object" && !Array.isArray(member)
      ? Object.fromEntries(Object.entries(member).sort(([a], [b]) => compareText(a, b)))
      : member,
  );
}

/**
 * Compare two strings by code point, as SQLite's BINARY and PostgreSQL's "C" collation order them
 * (JavaScript's `<` compares UTF-16 units, which puts U+10000 and above before U+E000–U+FFFF).
 */
export function compareText(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

/** A UTF-16 unit's rank in code point order: surrogates (D800–DFFF) after every other BMP unit. */
function codePointRank(unit: number): number {
  if (unit >= 0xe000) return unit - 0x800;
  if (unit >= 0xd800) return unit + 0x2000;
  return unit;
}

/** Whether the thread passes the search's filters. */
function matches(thread: PlatformThread, filters: ThreadFilters, ids: ReadonlySet<string> | undefined, wanted: ReadonlyArray<readonly [string, string]>): boolean {
  if (filters.status !== undefined && thread.status !== filters.status) return false;
  if (ids && !ids.has(thread.threadId)) return false;
  return wanted.every(([key, json]) => Object.hasOwn(thread.metadata, key) && canonicalJson(thread.metadata[key]) === json);
}

/** The search's order: its column and direction, then thread id ascending, so pages never overlap. */
function threadOrder(search: Pick<ThreadSearch, "sortBy" | "sortOrder">): (a: PlatformThread, b: PlatformThread) => number {
  const direction = search.sortOrder === "asc" ? 1 : -1;
  const primary = (a: PlatformThread, b: PlatformThread): number => {
    switch (search.sortBy) {
      case "thread_id":
        return compareText(a.threadId, b.threadId);
      case "created_at":
        return a.createdAt - b.createdAt;
      case "updated_at":
        return a.updatedAt - b.updatedAt;
      case "status":
        return compareText(a.status, b.status);
    }
  };
  return (a, b) => direction * primary(a, b) || compareText(a.threadId, b.threadId);
}

/** Newest first; equal times by run id, so pages never overlap. */
function newestRunFirst(a: PlatformRun, b: PlatformRun): number {
  return b.createdAt - a.createdAt || compareText(a.runId, b.runId);
}

/** `value` and every object and array in it made read-only; `value` itself is returned. */
function deepFrozen<T>(value: T): T {
  if (value === null || typeof value !== "object" || Object.isFrozen(value)) return value;
  for (const member of Object.values(value)) deepFrozen(member);
  return Object.freeze(value);
}

/** A thread as the memory records keep it: its metadata a JSON copy, the whole frozen. */
const storedThread = (thread: PlatformThread): PlatformThread => deepFrozen({ ...thread, metadata: jsonCopy(thread.metadata), ttlMs: thread.ttlMs ?? null });

/** Whether the thread's time to live ran out by `now` (see PlatformRecords.expiredThreads). */
export function threadExpired(thread: Pick<PlatformThread, "updatedAt" | "ttlMs">, now: number, defaultTtlMs: number | null): boolean {
  const ttl = thread.ttlMs ?? defaultTtlMs;
  return ttl !== null && thread.updatedAt + ttl <= now;
}
/** A run as the memory records keep it: what it carries of JSON copied in one go, the whole frozen. */
function storedRun(run: PlatformRun): PlatformRun {
  const { metadata, kwargs, base } = jsonCopy({ metadata: run.metadata, kwargs: run.kwargs, base: run.base ?? null });
  return deepFrozen({ ...run, metadata, kwargs, base });
}

/** A map key of several ids (JSON, so no separator can be forged by an id). */
const keyOf = (...ids: string[]): string => JSON.stringify(ids);

/**
 * The records of the memory backend: in this process, lost with it like its conversations. What
 * goes in is copied, JSON as the database backends store it, and frozen; what comes out is the
 * stored record itself, which no caller can change (a write stores a new one).
 */
export class MemoryPlatformRecords implements PlatformRecords {
  /** Threads by [user, thread]. */
  private readonly threads = new Map<string, PlatformThread>();
  /** Runs by [user, thread], then by run id. */
  private readonly runs = new Map<string, Map<string, PlatformRun>>();

  /** `conversations`: the memory backend's checkpoints, for openThread. */
  constructor(private readonly conversations: LatestCheckpoints) {}

  async createThread(thread: Omit<PlatformThread, "updatedAt">): Promise<PlatformThread | undefined> {
    const key = keyOf(thread.userId, thread.threadId);
    if (this.threads.has(key)) return undefined;
    const created = storedThread({ ...thread, updatedAt: thread.createdAt });
    this.threads.set(key, created);
    return created;
  }

  async getThread(userId: string, threadId: string): Promise<PlatformThread | undefined> {
    return this.threads.get(keyOf(userId, threadId));
  }

  async openThread(thread: Omit<PlatformThread, "updatedAt">, conversationKeys: readonly string[]): Promise<OpenedThread | undefined> {
    const found = await this.getThread(thread.userId, thread.threadId);
    if (found) return { thread: found, created: false };
    if ((await this.conversations.latest(conversationKeys)).size) return undefined;
    const created = await this.createThread(thread);
    return created && { thread: created, created: true };
  }

  async updateThread(userId: string, threadId: string, changes: ThreadChanges): Promise<PlatformThread | undefined> {
    const key = keyOf(userId, threadId);
    const thread = this.threads.get(key);
    if (!thread) return undefined;
    const updated: PlatformThread = deepFrozen({
      ...thread,
      metadata: changes.metadata ? { ...thread.metadata, ...jsonCopy(changes.metadata) } : thread.metadata,
      agentId: thread.agentId ?? changes.agentId ?? null,
      status: changes.status ?? thread.status,
      updatedAt: changes.now,
      ttlMs: changes.ttlMs ?? thread.ttlMs ?? null,
    });
    this.threads.set(key, updated);
    return updated;
  }

  async deleteThread(userId: string, threadId: string): Promise<boolean> {
    const key = keyOf(userId, threadId);
    this.runs.delete(key);
    return this.threads.delete(key);
  }

  async searchThreads(userId: string, search: ThreadSearch): Promise<PlatformThread[]> {
    return this.filtered(userId, search)
      .sort(threadOrder(search))
      .slice(search.offset, search.offset + search.limit);
  }

  async countThreads(userId: string, search: ThreadFilters): Promise<number> {
    return this.filtered(userId, search).length;
  }

  async expiredThreads(now: number, defaultTtlMs: number | null, from: number, limit: number): Promise<PlatformThread[]> {
    return [...this.threads.values()]
      .filter((thread) => thread.updatedAt >= from && threadExpired(thread, now, defaultTtlMs))
      .sort((a, b) => a.updatedAt - b.updatedAt)
      .slice(0, limit);
  }

  async putRun(run: PlatformRun): Promise<void> {
    const key = keyOf(run.userId, run.threadId);
    let runs = this.runs.get(key);
    if (!runs) this.runs.set(key, (runs = new Map()));
    runs.set(run.runId, storedRun(run));
  }

  async setRunStatus(userId: string, threadId: string, runId: string, status: RunStatus, now: number, base?: RunBase): Promise<PlatformRun | undefined> {
    const runs = this.runs.get(keyOf(userId, threadId));
    const run = runs?.get(runId);
    if (!runs || !run) return undefined;
    const updated: PlatformRun = deepFrozen({ ...run, status, updatedAt: now, base: run.base ?? (base ? jsonCopy(base) : null) });
    runs.set(runId, updated);
    return updated;
  }

  async runHandedBack(userId: string, threadId: string, runId: string, now: number): Promise<boolean> {
    const run = this.runs.get(keyOf(userId, threadId))?.get(runId);
    if (!run || FINISHED.has(run.status)) return false;
    await this.setRunStatus(userId, threadId, runId, "pending", now);
    if (run.status === "running") this.setThreadStatus(userId, threadId, "idle", now);
    return true;
  }

  async runStarted(run: PlatformRun, accepted: boolean): Promise<void> {
    const recorded = accepted ? this.runs.get(keyOf(run.userId, run.threadId))?.get(run.runId) : undefined;
    if (recorded) {
      const base = recorded.base ?? (run.base ? jsonCopy(run.base) : null);
      this.runs.get(keyOf(run.userId, run.threadId))!.set(run.runId, deepFrozen({ ...recorded, status: "running", updatedAt: run.updatedAt, base }));
    } else if (!accepted) await this.putRun(run);
    this.setThreadStatus(run.userId, run.threadId, "busy", run.updatedAt);
  }

  async runEnded(userId: string, threadId: string, runId: string, status: RunStatus, threadStatus: ThreadStatus, now: number): Promise<void> {
    const runs = this.runs.get(keyOf(userId, threadId));
    const run = runs?.get(runId);
    if (runs && run) runs.set(runId, deepFrozen({ ...run, status, updatedAt: now }));
    this.setThreadStatus(userId, threadId, threadStatus, now);
  }

  private setThreadStatus(userId: string, threadId: string, status: ThreadStatus, now: number): void {
    const key = keyOf(userId, threadId);
    const thread = this.threads.get(key);
    if (thread) this.threads.set(key, deepFrozen({ ...thread, status, updatedAt: now }));
  }

  async getRun(userId: string, threadId: string, runId: string): Promise<PlatformRun | undefined> {
    return this.runs.get(keyOf(userId, threadId))?.get(runId);
  }

  async getRunWithThread(userId: string, threadId: string, runId: string): Promise<RunWithThread | undefined> {
    const run = this.runs.get(keyOf(userId, threadId))?.get(runId);
    const thread = this.threads.get(keyOf(userId, threadId));
    return run && thread && { run, thread };
  }

  async listRuns(userId: string, threadId: string, page: { readonly offset: number; readonly limit: number; readonly status?: RunStatus }): Promise<PlatformRun[]> {
    const runs = [...(this.runs.get(keyOf(userId, threadId))?.values() ?? [])];
    return runs
      .filter((run) => page.status === undefined || run.status === page.status)
      .sort(newestRunFirst)
      .slice(page.offset, page.offset + page.limit);
  }

  async deleteRun(userId: string, threadId: string, runId: string): Promise<boolean> {
    return this.runs.get(keyOf(userId, threadId))?.delete(runId) ?? false;
  }

  async deleteFinishedRuns(cutoff: number, limit: number): Promise<number> {
    let gone = 0;
    for (const runs of this.runs.values()) {
      for (const [runId, run] of runs) {
        if (gone >= limit) return gone;
        if (FINISHED.has(run.status) && run.updatedAt < cutoff && runs.delete(runId)) gone++;
      }
    }
    return gone;
  }

  /** The user's threads that pass the filters, in no order. */
  private filtered(userId: string, filters: ThreadFilters): PlatformThread[] {
    const ids = filters.ids ? new Set(filters.ids) : undefined;
    const wanted = Object.entries(jsonCopy(filters.metadata ?? {})).map(([key, value]) => [key, canonicalJson(value)] as const);
    return [...this.threads.values()].filter((thread) => thread.userId === userId && matches(thread, filters, ids, wanted));
  }
}
