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
import { MessageStoreSaver } from "./message-store.ts";

export type SaverOperation = "getTuple" | "list" | "put" | "putWrites" | "deleteThread";

/** Where durations go: a histogram (ServiceMetrics.checkpointDuration), one child per label set. */
export interface OperationTimer {
  labels(labels: { backend: string; operation: SaverOperation }): { observe(seconds: number): void };
}

const OPERATIONS: readonly SaverOperation[] = ["getTuple", "list", "put", "putWrites", "deleteThread"];

/** Where each operation is traced (Tracing.checkpoint); absent when tracing is off. */
export interface OperationTracer {
  checkpoint<T>(backend: string, operation: SaverOperation, call: () => Promise<T>): Promise<T>;
}

/**
 * The service's message store, with the duration of each storage operation (getTuple, list, put,
 * putWrites, deleteThread) measured around it, and (tracing on) each but `list` a span. Everything else goes to the store as it is.
 */
export class TimedSaver extends BaseCheckpointSaver {
  /** Each operation's histogram child, its labels resolved once rather than on every call. */
  private readonly timers: ReadonlyMap<SaverOperation, { observe(seconds: number): void }>;

  constructor(
    readonly store: MessageStoreSaver,
    private readonly backend: string,
    timer: OperationTimer,
    private readonly tracer?: OperationTracer,
  ) {
    super(store.serde);
    this.timers = new Map(OPERATIONS.map((operation) => [operation, timer.labels({ backend, operation })]));
  }

  /**
   * `call`'s promise, its duration observed when it settles. Not an async function and no timer
   * object: a run makes several of these calls, and each wrapper around them costs promises of its own.
   */
  private timed<T>(operation: SaverOperation, call: () => Promise<T>): Promise<T> {
    const histogram = this.timers.get(operation)!;
    const started = performance.now();
    const observe = () => histogram.observe((performance.now() - started) / 1000);
    let result: Promise<T>;
    try {
      result = this.tracer ? this.tracer.checkpoint(this.backend, operation, call) : call();
    } catch (error) {
      // Thrown rather than rejected: still timed, and still a rejection to the caller, as from an async function.
      observe();
      return Promise.reject(error as Error);
    }
    result.then(observe, observe);
    return result;
  }

  override getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    return this.timed("getTuple", () => this.store.getTuple(config));
  }

  override async *list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple> {
    const started = performance.now();
    try {
      yield* this.store.list(config, options);
    } finally {
      this.timers.get("list")!.observe((performance.now() - started) / 1000);
    }
  }

  override put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    return this.timed("put", () => this.store.put(config, checkpoint, metadata, newVersions));
  }

  override putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void> {
    return this.timed("putWrites", () => this.store.putWrites(config, writes, taskId, taskPath));
  }

  override deleteThread(threadId: string): Promise<void> {
    return this.timed("deleteThread", () => this.store.deleteThread(threadId));
  }

  override getDeltaChannelHistory(
    options: Parameters<BaseCheckpointSaver["getDeltaChannelHistory"]>[0],
  ): ReturnType<BaseCheckpointSaver["getDeltaChannelHistory"]> {
    return this.store.getDeltaChannelHistory(options);
  }

  override getNextVersion(current: number | undefined): number {
    return this.store.getNextVersion(current);
  }
}

/** The message store behind a graph's checkpointer, timed or not; undefined for any other saver. */
export function messageStoreOf(saver: unknown): MessageStoreSaver | undefined {
  if (saver instanceof TimedSaver) return saver.store;
  return saver instanceof MessageStoreSaver ? saver : undefined;
}
