import type { RunnableConfig } from "@langchain/core/runnables";
import type { BaseCheckpointSaver, ChannelVersions, Checkpoint, CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { MessageRows } from "./message-rows.ts";
import type { ThreadIndex, ThreadOwner, ThreadSummary } from "./thread-index.ts";

/** The conversation list's new entry for a checkpoint that changed the messages of an owned conversation. */
export interface ThreadListing {
  readonly owner: ThreadOwner;
  readonly summary: ThreadSummary;
  /** Milliseconds since the epoch. */
  readonly now: number;
}

/**
 * One checkpoint as the message store writes it: LangGraph's `put` arguments (the messages already
 * replaced by key ranges), the message rows those ranges name for the first time, and the
 * conversation list's entry. The rows and the entry belong to the checkpoint's thread.
 */
export interface CheckpointWrite {
  readonly config: RunnableConfig;
  readonly checkpoint: Checkpoint;
  readonly metadata: CheckpointMetadata;
  readonly newVersions: ChannelVersions;
  readonly threadId: string;
  readonly messages: ReadonlyArray<readonly [number, string]>;
  readonly listing: ThreadListing | undefined;
}

/**
 * Where the message store writes a checkpoint. A database writes all of a CheckpointWrite or none
 * of it, in one transaction (SQLite) or one statement (PostgreSQL): a checkpoint never refers to rows
 * that were not stored, and the list never shows a turn whose checkpoint was lost.
 */
export interface CheckpointWriter {
  write(write: CheckpointWrite): Promise<RunnableConfig>;
}

/**
 * The writer of stores that live in this process (the memory backend, tests): rows, checkpoint and
 * listing one after the other. Nothing between them can fail but the process itself, which takes
 * every part with it.
 */
export function sequentialWriter(saver: BaseCheckpointSaver, rows: MessageRows, index: ThreadIndex | undefined): CheckpointWriter {
  return {
    async write({ config, checkpoint, metadata, newVersions, threadId, messages, listing }) {
      if (messages.length) await rows.insert(threadId, messages);
      const saved = await saver.put(config, checkpoint, metadata, newVersions);
      if (listing && index) await index.touch(threadId, listing.owner, listing.summary, listing.now);
      return saved;
    },
  };
}
