import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointTuple,
  type PendingWrite,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import type { CheckpointWriter } from "./checkpoint-writer.ts";
import { asDatabaseError, DatabaseUnavailableError, type DatabaseBackend } from "./database-errors.ts";
import type { IdempotencyStore } from "./idempotency-store.ts";
import type { LeaseStore } from "./leases.ts";
import type { MessageRows } from "./message-rows.ts";
import type { PlatformRecords } from "./platform-records.ts";
import type { RunQueueStore } from "./run-queue.ts";
import type { ThreadIndex } from "./thread-index.ts";
import type { LatestCheckpoints } from "./latest-checkpoints.ts";
import type { ThreadRewinder } from "./thread-rewind.ts";

/** The saver, message rows, conversation list, idempotency keys and Platform API records of a database that has been set up. */
export interface OpenDatabase {
  readonly saver: BaseCheckpointSaver;
  /** The saver again, as the message store's writer: a checkpoint with its rows and listing at once. */
  readonly writer: CheckpointWriter;
  readonly rows: MessageRows;
  readonly threads: ThreadIndex;
  readonly idempotency: IdempotencyStore;
  readonly platform: PlatformRecords;
  readonly runQueue: RunQueueStore;
  /** Takes a thread back to an earlier checkpoint (the Platform API's rollback). */
  readonly rewinder: ThreadRewinder;
  /** The latest checkpoint ids of several threads in one read. */
  readonly latestCheckpoints: LatestCheckpoints;
  readonly leases: LeaseStore;
}

/**
 * The storage boundary of a database backend. Until the database is set up (the worker may start
 * while it is unreachable), every call fails at once with DatabaseUnavailableError; afterwards
 * calls go to the library's saver and the message rows, and a failure of the database itself
 * (see isDatabaseFailure) comes out as DatabaseUnavailableError, whatever driver raised it.
 */
export class DatabaseGate {
  private database: OpenDatabase | undefined;
  readonly saver: GuardedSaver;
  readonly rows: GuardedRows;
  readonly writer: CheckpointWriter = { write: (write) => this.run(({ writer }) => writer.write(write)) };
  readonly rewinder: ThreadRewinder = {
    rewind: (target) => this.run(({ rewinder }) => rewinder.rewind(target)),
    prune: (target) => this.run(({ rewinder }) => rewinder.prune(target)),
  };
  readonly latestCheckpoints: LatestCheckpoints = { latest: (threadIds) => this.run(({ latestCheckpoints }) => latestCheckpoints.latest(threadIds)) };

  constructor(
    readonly backend: DatabaseBackend,
    serde: SerializerProtocol,
  ) {
    this.saver = new GuardedSaver(this, serde);
    this.rows = new GuardedRows(this);
  }

  get isOpen(): boolean {
    return this.database !== undefined;
  }

  open(database: OpenDatabase): void {
    this.database = database;
  }

  current(): OpenDatabase {
    if (!this.database) throw new DatabaseUnavailableError(this.backend, new Error("the database is not set up yet"));
    return this.database;
  }

  async run<T>(op: (database: OpenDatabase) => Promise<T>): Promise<T> {
    try {
      return await op(this.current());
    } catch (error) {
      throw asDatabaseError(this.backend, error);
    }
  }
}

/**
 * The library saver behind the gate. Its serializer is the one the library saver is built with
 * (see backend.ts), so the message store's rows and the saver's blobs use the same encoding.
 */
export class GuardedSaver extends BaseCheckpointSaver {
  constructor(
    private readonly gate: DatabaseGate,
    serde: SerializerProtocol,
  ) {
    super(serde);
  }

  override getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    return this.gate.run(({ saver }) => saver.getTuple(config));
  }

  override async *list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple> {
    try {
      yield* this.gate.current().saver.list(config, options);
    } catch (error) {
      throw asDatabaseError(this.gate.backend, error);
    }
  }

  override put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    return this.gate.run(({ saver }) => saver.put(config, checkpoint, metadata, newVersions));
  }

  override putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void> {
    return this.gate.run(({ saver }) => saver.putWrites(config, writes, taskId, taskPath));
  }

  override deleteThread(threadId: string): Promise<void> {
    return this.gate.run(({ saver }) => saver.deleteThread(threadId));
  }

  override getDeltaChannelHistory(
    options: Parameters<BaseCheckpointSaver["getDeltaChannelHistory"]>[0],
  ): ReturnType<BaseCheckpointSaver["getDeltaChannelHistory"]> {
    return this.gate.run(({ saver }) => saver.getDeltaChannelHistory(options));
  }

  override getNextVersion(current: number | undefined): number {
    return this.gate.isOpen ? this.gate.current().saver.getNextVersion(current) : super.getNextVersion(current);
  }
}

/** The message rows behind the same gate. */
export class GuardedRows implements MessageRows {
  constructor(private readonly gate: DatabaseGate) {}

  maxKey(threadId: string): Promise<number> {
    return this.gate.run(({ rows }) => rows.maxKey(threadId));
  }

  insert(threadId: string, rows: ReadonlyArray<readonly [number, string]>): Promise<void> {
    return this.gate.run((database) => database.rows.insert(threadId, rows));
  }

  read(threadId: string, keys: readonly number[]): Promise<Map<number, string>> {
    return this.gate.run(({ rows }) => rows.read(threadId, keys));
  }

  deleteThread(threadId: string): Promise<void> {
    return this.gate.run(({ rows }) => rows.deleteThread(threadId));
  }
}
