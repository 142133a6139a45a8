import { setTimeout as sleep } from "node:timers/promises";
import type Database from "better-sqlite3";
import type pg from "pg";
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { NO_SHORTCUTS, type ActiveShortcuts } from "../config/library-shortcuts.ts";
import type { Config, ServerdbConfig } from "../config/schema.ts";
import type { Logger } from "../observability/logger.ts";
import { DatabaseUnavailableError, describeDatabaseFailure, isDatabaseFailure, type DatabaseBackend } from "./database-errors.ts";
import { DatabaseGate, type OpenDatabase } from "./guarded-saver.ts";
import { GuardedIdempotencyStore, GuardedLeases, GuardedPlatformRecords, GuardedRunQueue, GuardedThreadIndex } from "./guarded-stores.ts";
import { MemoryLeases, PostgresLeases, SqliteLeases, type LeaseStore } from "./leases.ts";
import { MemoryIdempotencyStore, PostgresIdempotencyStore, SqliteIdempotencyStore, type IdempotencyStore } from "./idempotency-store.ts";
import { ChangedChannelsMemorySaver } from "./memory-saver.ts";
import { MemoryMessageRows, PostgresMessageRows, SqliteMessageRows } from "./message-rows.ts";
import { MessageStoreSaver } from "./message-store.ts";
import { postgresSaver, postgresWriter } from "./pg-saver.ts";
import { withSetupLock } from "./pg-transaction.ts";
import { MemoryPlatformRecords, type PlatformRecords } from "./platform-records.ts";
import { PostgresPlatformRecords, SqlitePlatformRecords } from "./platform-records-sql.ts";
import { ReadableSerde } from "./readable-serde.ts";
import { createServerPool } from "./server-pool.ts";
import { MemoryRunQueue, type RunQueueStore } from "./run-queue.ts";
import { PostgresRunQueue, SqliteRunQueue } from "./run-queue-sql.ts";
import { openSqliteFile } from "./sqlite-file.ts";
import { SqliteCommitGroup } from "./sqlite-commit-group.ts";
import { sqliteFileSavers } from "./sqlite-saver.ts";
import { PostgresLatestCheckpoints, SaverLatestCheckpoints, SqliteLatestCheckpoints, type LatestCheckpoints } from "./latest-checkpoints.ts";
import { MemoryThreadIndex, type ThreadIndex } from "./thread-index.ts";
import { PostgresThreadRewinder, RebuildingThreadRewinder, SqliteThreadRewinder } from "./thread-rewind.ts";
import { PostgresThreadIndex, SqliteThreadIndex } from "./thread-index-sql.ts";

export type BackendKind = Config["MEMORY_BACKEND"];

/**
 * The checkpoint saver of one worker and what readiness needs to know about its database. Every
 * saver reads through ReadableSerde, so stored data that cannot be revived is reported as such.
 */
export interface CheckpointBackend {
  readonly kind: BackendKind;
  /** A MessageStoreSaver: each message is stored once per thread (see message-store.ts). */
  readonly saver: MessageStoreSaver;
  /** The conversation list (thread-index.ts), written by the saver with each turn. */
  readonly threads: ThreadIndex;
  /** Idempotency keys of invoke, history append and feedback. */
  readonly idempotency: IdempotencyStore;
  /** The LangGraph Platform API's threads and runs (platform-records.ts). */
  readonly platform: PlatformRecords;
  /** The background runs' queue (run-queue.ts). */
  readonly runQueue: RunQueueStore;
  /** Named leases: one holder across every worker and host of the database (leases.ts). */
  readonly leases: LeaseStore;
  /** The latest checkpoint ids of several threads in one read (latest-checkpoints.ts). */
  readonly latestCheckpoints: LatestCheckpoints;
  /** False while the worker waits for its database to be reachable and set up. */
  isReady(): boolean;
  /** Resolves when the database answers a trivial query; rejects otherwise (and before it is set up). */
  ping(): Promise<void>;
  /** True while every pooled connection is busy and callers are queueing for one. */
  saturated(): boolean;
  close(): Promise<void>;
}

export interface BackendHooks {
  readonly logger: Logger;
  /** Whether the database savers write with their own statements (decided at startup); default: the library's savers. */
  readonly shortcuts?: Pick<ActiveShortcuts, "sqliteSaverWrites" | "postgresSaverWrites">;
}

/** Connections per worker for the server database. */
const SERVERDB_POOL_SIZE = 10;
/** Setup retries back off from the first to the largest delay, ±20 %. */
const SETUP_RETRY_FIRST_MS = 100;
const SETUP_RETRY_MAX_MS = 2_000;
/** How long closing waits for the pool's connections to end. */
const POOL_END_WAIT_MS = 2_000;
/** At most one log line per this interval for repeated database trouble. */
const LOG_INTERVAL_MS = 10_000;

/** One database: how to set it up (called again after each failure), probe it, and close it. */
interface CheckpointDatabase {
  connect(serde: SerializerProtocol): Promise<OpenDatabase>;
  ping(): Promise<void>;
  saturated(): boolean;
  close(): Promise<void>;
}

/** A function that returns true at most once per `ms`. */
function throttle(ms: number): () => boolean {
  let last = -Infinity;
  return () => {
    const now = performance.now();
    if (now - last < ms) return false;
    last = now;
    return true;
  };
}

/**
 * Open the checkpoint backend of MEMORY_BACKEND. A database backend is usable at once: if the
 * database cannot be reached or set up, the worker still starts, every storage call answers
 * DatabaseUnavailableError (503) and readiness fails, while setup is retried with backoff in the
 * background until it succeeds. Only an error that is not the database's (a malformed
 * DATABASE_URL, a FILEDB_DB_PATH whose folder cannot be created) refuses the start.
 */
export async function openCheckpointBackend(config: Config, hooks: BackendHooks): Promise<CheckpointBackend> {
  if (config.MEMORY_BACKEND === "memory") {
    const threads = new MemoryThreadIndex();
    const saver = new ChangedChannelsMemorySaver(new ReadableSerde());
    const rows = new MemoryMessageRows();
    const latestCheckpoints = new SaverLatestCheckpoints(saver);
    return {
      kind: "memory",
      saver: new MessageStoreSaver(saver, rows, config.MESSAGE_CACHE_SIZE, threads, undefined, new RebuildingThreadRewinder(saver, rows)),
      threads,
      idempotency: new MemoryIdempotencyStore(),
      platform: new MemoryPlatformRecords(latestCheckpoints),
      runQueue: new MemoryRunQueue(),
      leases: new MemoryLeases(),
      latestCheckpoints,
      isReady: () => true,
      ping: async () => {},
      saturated: () => false,
      close: async () => {},
    };
  }
  const kind: DatabaseBackend = config.MEMORY_BACKEND;
  const logger = hooks.logger.child({ backend: kind });
  const shortcuts = hooks.shortcuts ?? NO_SHORTCUTS;
  const database =
    config.MEMORY_BACKEND === "filedb" ? fileDatabase(config, shortcuts.sqliteSaverWrites) : serverDatabase(config, logger, shortcuts.postgresSaverWrites);
  const gate = new DatabaseGate(kind, new ReadableSerde());
  const setup = new SetupLoop(database, gate, logger);
  try {
    await setup.start();
  } catch (error) {
    await database.close().catch(() => {});
    throw error;
  }
  const threads = new GuardedThreadIndex(gate);
  return {
    kind,
    saver: new MessageStoreSaver(gate.saver, gate.rows, config.MESSAGE_CACHE_SIZE, threads, gate.writer, gate.rewinder),
    threads,
    idempotency: new GuardedIdempotencyStore(gate),
    platform: new GuardedPlatformRecords(gate),
    runQueue: new GuardedRunQueue(gate),
    leases: new GuardedLeases(gate),
    latestCheckpoints: gate.latestCheckpoints,
    isReady: () => gate.isOpen,
    ping: async () => {
      if (!gate.isOpen) throw new DatabaseUnavailableError(kind, new Error("the database is not set up yet"));
      await database.ping();
    },
    saturated: () => database.saturated(),
    close: async () => {
      setup.stop();
      await database.close();
    },
  };
}

/**
 * Sets the database up, and after a failure tries again with backoff until it succeeds or the
 * backend closes. `start` resolves after the first attempt, whatever its outcome, unless that
 * attempt failed for a reason other than the database (then it rejects: refuse to start).
 */
class SetupLoop {
  private attempts = 0;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly since = performance.now();
  private readonly shouldLog = throttle(LOG_INTERVAL_MS);

  constructor(
    private readonly database: CheckpointDatabase,
    private readonly gate: DatabaseGate,
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    const error = await this.attempt();
    if (error !== undefined && !isDatabaseFailure(error)) throw error;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /** One attempt; schedules the next after a failure. Resolves with the failure, if any. */
  private async attempt(): Promise<unknown> {
    this.attempts++;
    try {
      const open = await this.database.connect(this.gate.saver.serde);
      if (this.stopped) return undefined;
      this.gate.open(open);
      if (this.attempts > 1) {
        this.logger.info({ attempts: this.attempts, waited_ms: Math.round(performance.now() - this.since) }, "checkpoint database ready");
      }
      return undefined;
    } catch (error) {
      if (this.stopped) return error;
      const base = Math.min(SETUP_RETRY_FIRST_MS * 2 ** (this.attempts - 1), SETUP_RETRY_MAX_MS);
      const delay = Math.round(base * (0.8 + Math.random() * 0.4));
      if (this.attempts === 1 || this.shouldLog()) {
        this.logger.warn(
          { attempt: this.attempts, retry_in_ms: delay, db: describeDatabaseFailure(error) },
          "checkpoint database unavailable; readiness fails until it is set up",
        );
      }
      this.timer = setTimeout(() => void this.attempt(), delay);
      return error;
    }
  }
}

/** The SQLite file (FILEDB_DB_PATH): one connection per worker, in WAL mode. */
function fileDatabase(config: Config, saverShortcut: boolean): CheckpointDatabase {
  let db: Database.Database | undefined;
  let closed = false;
  return {
    async connect(serde) {
      let savers: ReturnType<typeof sqliteFileSavers> | undefined;
      let rows: SqliteMessageRows | undefined;
      let threads: SqliteThreadIndex | undefined;
      let idempotency: SqliteIdempotencyStore | undefined;
      let platform: SqlitePlatformRecords | undefined;
      let runQueue: SqliteRunQueue | undefined;
      let rewinder: SqliteThreadRewinder | undefined;
      let leases: SqliteLeases | undefined;
      let latestCheckpoints: SqliteLatestCheckpoints | undefined;
      const opened = await openSqliteFile(config.FILEDB_DB_PATH, Math.round(config.FILEDB_BUSY_TIMEOUT * 1000), (handle) => {
        rows = new SqliteMessageRows(handle);
        threads = new SqliteThreadIndex(handle);
        savers = sqliteFileSavers(handle, serde, rows, threads, saverShortcut);
        idempotency = new SqliteIdempotencyStore(handle);
        platform = new SqlitePlatformRecords(handle);
        runQueue = new SqliteRunQueue(handle);
        rewinder = new SqliteThreadRewinder(handle);
        leases = new SqliteLeases(handle);
        latestCheckpoints = new SqliteLatestCheckpoints(handle);
      });
      if (closed) {
        opened.close();
        throw new Error("the backend was closed");
      }
      db = opened;
      return { saver: savers!.saver, writer: savers!.writer, rows: rows!, threads: threads!, idempotency: idempotency!, platform: platform!, runQueue: runQueue!, rewinder: rewinder!, leases: leases!, latestCheckpoints: latestCheckpoints! };
    },
    async ping() {
      db?.prepare("SELECT 1").get();
    },
    saturated: () => false,
    async close() {
      closed = true;
      // Writes asked for in this tick are committed (or refused) before the connection goes.
      if (db) SqliteCommitGroup.of(db).flush();
      db?.close();
    },
  };
}

/** PostgreSQL (DATABASE_URL, SERVERDB_SCHEMA): one bounded pool per worker. */
function serverDatabase(config: ServerdbConfig, logger: Logger, saverShortcut: boolean): CheckpointDatabase {
  const schema = config.SERVERDB_SCHEMA;
  const shouldLog = throttle(LOG_INTERVAL_MS);
  const pool: pg.Pool = createServerPool({
    connectionString: config.DATABASE_URL,
    max: SERVERDB_POOL_SIZE,
    connectTimeoutMs: Math.round(config.SERVERDB_CONNECT_TIMEOUT * 1000),
    queryTimeoutMs: Math.round(config.SERVERDB_QUERY_TIMEOUT * 1000),
    // The request that used the connection is answered 503; this is only for the operator.
    onConnectionError: (error) => {
      if (shouldLog()) logger.warn({ db: describeDatabaseFailure(error) }, "checkpoint database connection lost");
    },
  });
  return {
    async connect(serde) {
      const saver = postgresSaver(pool, serde, schema, saverShortcut);
      // The saver's migrations run under the lock; they use their own pooled connection.
      await withSetupLock(pool, `agenthost:setup:${schema}`, () => saver.setup());
      const rows = new PostgresMessageRows(pool, schema);
      await rows.setup();
      const threads = new PostgresThreadIndex(pool, schema);
      await threads.setup();
      const idempotency = new PostgresIdempotencyStore(pool, schema);
      await idempotency.setup();
      const platform = new PostgresPlatformRecords(pool, schema);
      await platform.setup();
      const runQueue = new PostgresRunQueue(pool, schema);
      await runQueue.setup();
      const rewinder = new PostgresThreadRewinder(pool, schema);
      const leases = new PostgresLeases(pool, schema);
      await leases.setup();
      const latestCheckpoints = new PostgresLatestCheckpoints(pool, schema);
      return { saver, writer: postgresWriter(saver, rows, threads), rows, threads, idempotency, platform, runQueue, rewinder, leases, latestCheckpoints };
    },
    async ping() {
      await pool.query("SELECT 1");
    },
    saturated: () => pool.totalCount >= SERVERDB_POOL_SIZE && pool.idleCount === 0 && pool.waitingCount > 0,
    // pool.end waits for every connection to say goodbye; a partitioned one never would.
    close: () => Promise.race([pool.end(), sleep(POOL_END_WAIT_MS)]),
  };
}
