import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointTuple,
  type PendingWrite,
} from "@langchain/langgraph-checkpoint";
import { asDatabaseError, DatabaseUnavailableError, type DatabaseBackend } from "./database-errors.ts";
import type { HistoryIndexStore, IndexEntry, LatestCheckpoint } from "./history-index.ts";

/** The saver and index store of a database that has been set up. */
export interface OpenDatabase {
  readonly saver: BaseCheckpointSaver;
  readonly index: HistoryIndexStore;
}

/**
 * The storage boundary of a database backend. Until the database is set up (the worker may start
 * while it is unreachable), every call fails at once with DatabaseUnavailableError; afterwards
 * calls go to the library's saver and the index store, and a failure of the database itself
 * (see isDatabaseFailure) comes out as DatabaseUnavailableError, whatever driver raised it.
 */
export class DatabaseGate {
  private database: OpenDatabase | undefined;
  readonly saver: GuardedSaver;
  readonly index: GuardedIndex;

  constructor(readonly backend: DatabaseBackend) {
    this.saver = new GuardedSaver(this);
    this.index = new GuardedIndex(this);
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
 * The checkpoint saver seen by graphs. Its serializer is the one the library saver is built with
 * (see backend.ts), so IndexedSaver's chunks and the saver's blobs use the same encoding.
 */
export class GuardedSaver extends BaseCheckpointSaver {
  constructor(private readonly gate: DatabaseGate) {
    super();
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

/** The history index store behind the same gate. */
export class GuardedIndex implements HistoryIndexStore {
  constructor(private readonly gate: DatabaseGate) {}

  latest(threadId: string): Promise<LatestCheckpoint> {
    return this.gate.run(({ index }) => index.latest(threadId));
  }

  existingChunks(threadId: string, hashes: readonly string[]): Promise<Set<string>> {
    return this.gate.run(({ index }) => index.existingChunks(threadId, hashes));
  }

  write(threadId: string, checkpointId: string, entry: IndexEntry, newChunks: ReadonlyArray<readonly [string, string]>): Promise<void> {
    return this.gate.run(({ index }) => index.write(threadId, checkpointId, entry, newChunks));
  }

  readChunks(threadId: string, hashes: readonly string[]): Promise<Map<string, string>> {
    return this.gate.run(({ index }) => index.readChunks(threadId, hashes));
  }

  deleteThread(threadId: string): Promise<void> {
    return this.gate.run(({ index }) => index.deleteThread(threadId));
  }
}
