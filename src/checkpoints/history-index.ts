import { createHash } from "node:crypto";
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

/**
 * The message index: beside every root-namespace checkpoint, the length of its `messages` list and
 * the hashes of that list cut into fixed chunks of CHUNK_SIZE messages. Chunks are stored once per
 * thread by content hash, so a turn that appends a message rewrites only the last chunk, and a
 * history page revives one or two chunks instead of the whole conversation.
 *
 * Reads trust the index only for the thread's latest checkpoint and only when it has an entry;
 * anything else (a checkpoint written before the index existed, a migrated thread, a messages
 * channel stored as deltas) falls back to the graph's own getState, which is always correct.
 */
export const CHUNK_SIZE = 100;

/** LangGraph's task id for writes that belong to no task (Command updates); see `readLatest`. */
export const NULL_TASK_ID = "00000000-0000-0000-0000-000000000000";

export interface IndexEntry {
  readonly total: number;
  readonly chunkSize: number;
  /** Content hashes of the chunks, in order. */
  readonly chunks: readonly string[];
}

/** What a page read learns about a thread before touching any message. */
export type LatestCheckpoint =
  | { readonly found: false }
  | {
      readonly found: true;
      readonly checkpointId: string;
      /** Absent when this checkpoint was not indexed. */
      readonly entry: IndexEntry | undefined;
      /** Pending no-task writes to `messages`: the stored list is not the whole state. */
      readonly pendingMessageWrites: boolean;
    };

/** Storage of the index; one implementation per checkpoint backend. */
export interface HistoryIndexStore {
  /** The latest checkpoint of the root namespace of `threadId`, with its index entry. */
  latest(threadId: string): Promise<LatestCheckpoint>;
  /** Which of `hashes` are already stored for this thread. */
  existingChunks(threadId: string, hashes: readonly string[]): Promise<Set<string>>;
  /** Store new chunks (idempotent by hash) and the entry of one checkpoint (upsert). */
  write(threadId: string, checkpointId: string, entry: IndexEntry, newChunks: ReadonlyArray<readonly [string, string]>): Promise<void>;
  /** Chunk texts by hash; a hash that is not stored is absent from the map. */
  readChunks(threadId: string, hashes: readonly string[]): Promise<Map<string, string>>;
  /** Remove every entry and chunk of the thread. */
  deleteThread(threadId: string): Promise<void>;
}

const decoder = new TextDecoder();

function chunkHash(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex").slice(0, 32);
}

/** The `messages` channel value of a checkpoint as a list, or undefined when it is not one. */
function messagesOf(checkpoint: Checkpoint): unknown[] | undefined {
  const value: unknown = checkpoint.channel_values?.messages;
  if (Array.isArray(value)) return value;
  // A delta channel snapshot carries the full list in `.value`.
  const snapshot = value as { lg_name?: unknown; value?: unknown } | undefined;
  if (snapshot?.lg_name === "DeltaSnapshot" && Array.isArray(snapshot.value)) return snapshot.value;
  return undefined;
}

/**
 * A checkpoint saver that keeps the message index of every root-namespace checkpoint it writes,
 * delegating everything else to the backend's saver. The index row is written before the
 * checkpoint, so by the time a checkpoint is visible its index is too; a failed index write is
 * reported and leaves that checkpoint unindexed (reads then fall back), never fails the run.
 */
export class IndexedSaver extends BaseCheckpointSaver {
  constructor(
    readonly inner: BaseCheckpointSaver,
    readonly index: HistoryIndexStore,
    private readonly onIndexError: (error: unknown) => void = () => {},
  ) {
    super(inner.serde);
  }

  override getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    return this.inner.getTuple(config);
  }

  override list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple> {
    return this.inner.list(config, options);
  }

  override async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    const threadId: unknown = config.configurable?.thread_id;
    const namespace: unknown = config.configurable?.checkpoint_ns ?? "";
    if (typeof threadId === "string" && namespace === "") {
      try {
        await this.indexCheckpoint(threadId, checkpoint);
      } catch (error) {
        this.onIndexError(error);
      }
    }
    return this.inner.put(config, checkpoint, metadata, newVersions);
  }

  override putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void> {
    return this.inner.putWrites(config, writes, taskId, taskPath);
  }

  override async deleteThread(threadId: string): Promise<void> {
    await this.inner.deleteThread(threadId);
    await this.index.deleteThread(threadId);
  }

  override getNextVersion(current: number | undefined): number {
    return this.inner.getNextVersion(current);
  }

  override getDeltaChannelHistory(
    options: Parameters<BaseCheckpointSaver["getDeltaChannelHistory"]>[0],
  ): ReturnType<BaseCheckpointSaver["getDeltaChannelHistory"]> {
    return this.inner.getDeltaChannelHistory(options);
  }

  /** Cut the checkpoint's messages into chunks, store the new ones and the entry. */
  private async indexCheckpoint(threadId: string, checkpoint: Checkpoint): Promise<void> {
    const messages = messagesOf(checkpoint);
    if (!messages) return;
    const chunks: Array<readonly [string, string]> = [];
    for (let start = 0; start < messages.length; start += CHUNK_SIZE) {
      const [type, bytes] = await this.serde.dumpsTyped(messages.slice(start, start + CHUNK_SIZE));
      if (type !== "json") return;
      const text = decoder.decode(bytes);
      chunks.push([chunkHash(text), text]);
    }
    const hashes = chunks.map(([hash]) => hash);
    const existing = hashes.length ? await this.index.existingChunks(threadId, hashes) : new Set<string>();
    const seen = new Set<string>();
    const fresh = chunks.filter(([hash]) => {
      if (existing.has(hash) || seen.has(hash)) return false;
      seen.add(hash);
      return true;
    });
    await this.index.write(threadId, checkpoint.id, { total: messages.length, chunkSize: CHUNK_SIZE, chunks: hashes }, fresh);
  }

  /**
   * Messages [offset, offset + limit) of the thread's latest checkpoint and its total, from the
   * index; undefined when the index cannot answer (the caller falls back to getState).
   */
  async readPage(threadId: string, offset: number, limit: number): Promise<{ messages: unknown[]; total: number } | undefined> {
    const latest = await this.index.latest(threadId);
    if (!latest.found) return { messages: [], total: 0 };
    const entry = latest.entry;
    if (!entry || latest.pendingMessageWrites) return undefined;
    const end = Math.min(entry.total, offset + limit);
    if (offset >= end) return { messages: [], total: entry.total };
    const first = Math.floor(offset / entry.chunkSize);
    const last = Math.floor((end - 1) / entry.chunkSize);
    const wanted = entry.chunks.slice(first, last + 1);
    const texts = await this.index.readChunks(threadId, wanted);
    const revived: unknown[] = [];
    for (const hash of wanted) {
      const text = texts.get(hash);
      if (text === undefined) return undefined;
      const chunk: unknown = await this.serde.loadsTyped("json", text);
      if (!Array.isArray(chunk)) return undefined;
      revived.push(...(chunk as unknown[]));
    }
    const from = offset - first * entry.chunkSize;
    return { messages: revived.slice(from, from + (end - offset)), total: entry.total };
  }
}
