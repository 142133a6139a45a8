import { isBaseMessage, type BaseMessage } from "@langchain/core/messages";
import {
  copyCheckpoint,
  emptyCheckpoint,
  uuid6,
  type BaseCheckpointSaver,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
} from "@langchain/langgraph-checkpoint";
import type { RegisteredAgent } from "../agents/agent.ts";
import { ServiceError } from "../errors/service-error.ts";
import { SaverLatestCheckpoints, type LatestCheckpoints } from "./latest-checkpoints.ts";
import { messageCountOf, type MessageStoreSaver } from "./message-store.ts";
import type { RunBase } from "./platform-records.ts";
import type { ThreadOwner } from "./thread-index.ts";
import { messageStoreOf } from "./timed-saver.ts";

/** One page of a conversation's stored messages and how many it holds. */
export interface StoredPage {
  readonly messages: BaseMessage[];
  readonly total: number;
  /** The latest checkpoint's pending writes, when the read had them at hand (the message store's read). */
  readonly pendingWrites?: readonly CheckpointPendingWrite[];
}

/** What a run needs to know of its conversation before it starts, from one read of the latest checkpoint. */
export interface ConversationHead {
  /** The latest root checkpoint's id; undefined when nothing is stored. */
  readonly checkpointId?: string | undefined;
  readonly messageCount: number;
  /** The latest checkpoint's pending writes: where a paused run's interrupts are. */
  readonly pendingWrites: readonly CheckpointPendingWrite[];
}

/** The head of a conversation with nothing stored. */
export const EMPTY_HEAD: ConversationHead = { messageCount: 0, pendingWrites: [] };

interface MessagesChannel {
  fromCheckpoint(value: unknown): { update(values: unknown[]): boolean; checkpoint(): unknown };
}

/**
 * The conversations as the service reads and writes them outside a graph: a run's head, history
 * pages, appends and clears. The composition root builds it over the same saver it gives every
 * agent's graph (the message store, timed), so nothing reaches storage through an agent's graph.
 * An agent is named only where its graph decides: its `messages` channel for an append, its own
 * state read when the message store cannot answer a page alone.
 */
export class ConversationStore {
  private readonly messages: MessageStoreSaver | undefined;

  constructor(
    private readonly saver: BaseCheckpointSaver,
    /** The backend's read of several conversations' latest checkpoints at once; default: one getTuple each. */
    private readonly latest: LatestCheckpoints = new SaverLatestCheckpoints(saver),
  ) {
    this.messages = messageStoreOf(saver);
  }

  /**
   * The conversation's head, read for a run about to start on it (under its lock). It reads the
   * checkpoint the run starts from, so a conversation that cannot be revived is refused here, before
   * any stream header; the message store keeps the read for the graph's own first read, so a run
   * reads its checkpoint once. Call `endRun` when the run ends, whether its graph read it or not.
   */
  async headForRun(storageKey: string): Promise<ConversationHead> {
    const tuple = this.messages
      ? await this.messages.readHead(storageKey)
      : await this.saver.getTuple({ configurable: { thread_id: storageKey, checkpoint_ns: "" } });
    return headOf(tuple);
  }

  /** The head of the conversation now, for a reader (no run). */
  async head(storageKey: string): Promise<ConversationHead> {
    return headOf(await this.saver.getTuple({ configurable: { thread_id: storageKey, checkpoint_ns: "" } }));
  }

  /**
   * Which of these conversations have anything stored, each with its latest checkpoint's id (ids
   * order by time: the largest was written last); one read for all of them on a database.
   */
  latestOf(storageKeys: readonly string[]): Promise<Map<string, string>> {
    return this.latest.latest(storageKeys);
  }

  /**
   * A run on the conversation ended. A failed one also drops its revived messages in this worker,
   * since the run's nodes may have changed them without saving; the next run reads them back as stored.
   */
  endRun(storageKey: string, failed: boolean): void {
    if (failed) this.messages?.discard(storageKey);
    else this.messages?.releaseHead(storageKey);
  }

  /**
   * Messages [offset, offset + limit) of a conversation. The message store answers reviving only the
   * page; when it cannot (see MessageStoreSaver.readPage), the agent's graph reads its state.
   */
  async readPage(agent: RegisteredAgent, storageKey: string, offset: number, limit: number): Promise<StoredPage> {
    if (this.messages) {
      const page = await this.messages.readPage(storageKey, offset, limit);
      if (page) return { messages: onlyMessages(page.messages), total: page.total, pendingWrites: page.pendingWrites };
    }
    const state = await agent.graph.getState({ configurable: { thread_id: storageKey } });
    const all: unknown = (state.values as { messages?: unknown } | undefined)?.messages;
    const list = Array.isArray(all) ? (all as unknown[]) : [];
    return { messages: onlyMessages(list.slice(offset, offset + limit)), total: list.length };
  }

  /**
   * Append messages to a conversation without running the agent: one new checkpoint whose
   * `messages` channel is the old list combined with the new messages through the graph's own
   * reducer. No node is credited with the update, so no node becomes due: the conversation stays
   * idle and the next run starts from the new list. Returns the list's new length; a list longer
   * than `maxMessages` is refused (conversation_too_long) and nothing is written.
   */
  async append(
    agent: RegisteredAgent,
    storageKey: string,
    messages: BaseMessage[],
    maxMessages = Number.POSITIVE_INFINITY,
    /** Who owns the conversation (ownerConfigurable), for the conversation list. */
    owner: Record<string, unknown> = {},
  ): Promise<number> {
    const { saver } = this;
    const channelSpec = messagesChannelOf(agent);
    const base = { configurable: { thread_id: storageKey, checkpoint_ns: "" } };
    const saved = await saver.getTuple(base);
    const checkpoint = saved ? copyCheckpoint(saved.checkpoint) : emptyCheckpoint();

    const channel = channelSpec.fromCheckpoint(checkpoint.channel_values.messages);
    channel.update([messages]);
    const value = channel.checkpoint();
    if (Array.isArray(value) && value.length > maxMessages) {
      const before: unknown = checkpoint.channel_values.messages;
      throw tooLong(Array.isArray(before) ? before.length : 0, messages.length, maxMessages);
    }
    const version = saver.getNextVersion(checkpoint.channel_versions.messages as number | undefined);

    const step = typeof saved?.metadata?.step === "number" ? saved.metadata.step + 1 : -1;
    checkpoint.id = uuid6(step);
    checkpoint.ts = new Date().toISOString();
    checkpoint.channel_values = { ...checkpoint.channel_values, messages: value };
    checkpoint.channel_versions = { ...checkpoint.channel_versions, messages: version };
    const metadata: CheckpointMetadata = {
      source: "update",
      step,
      parents: saved?.metadata?.parents ?? {},
    };
    const target = saved?.config ?? base;
    await saver.put({ ...target, configurable: { ...target.configurable, ...owner } }, checkpoint, metadata, { messages: version });
    return Array.isArray(value) ? value.length : messages.length;
  }

  /**
   * Take the conversation back to where a run found it, as if the run never ran (see
   * MessageStoreSaver.rewind): `base` is the head the run started from. The caller holds the lock.
   */
  async rewind(storageKey: string, base: RunBase, owner: ThreadOwner | undefined): Promise<void> {
    if (!this.messages) throw new Error("this checkpoint store cannot take a conversation back");
    await this.messages.rewind(storageKey, base.checkpointId, base.writes, owner);
  }

  /** Keep only the conversation's latest `keep` checkpoints (compaction; see MessageStoreSaver.prune). The caller holds the lock. */
  async compact(storageKey: string, keep: number): Promise<number> {
    return this.messages ? this.messages.prune(storageKey, keep) : 0;
  }

  /** Delete every checkpoint, blob, pending write and message row of the conversation, in every namespace. */
  async clear(storageKey: string): Promise<void> {
    await this.saver.deleteThread(storageKey);
  }
}

function headOf(tuple: CheckpointTuple | undefined): ConversationHead {
  return { checkpointId: tuple?.checkpoint.id, messageCount: messageCountOf(tuple?.checkpoint.channel_values?.messages), pendingWrites: tuple?.pendingWrites ?? [] };
}

/** Keep only real messages: a malformed entry in state must not break a read. */
function onlyMessages(values: unknown[]): BaseMessage[] {
  return values.filter((value): value is BaseMessage => isBaseMessage(value));
}

function tooLong(held: number, adding: number, max: number): ServiceError {
  return new ServiceError("conversation_too_long", {
    detail:
      `The conversation holds ${held} messages and this request would add ${adding}; CONVERSATION_MAX_MESSAGES allows ${max}. ` +
      "Start a new thread_id, or clear this conversation.",
  });
}

/**
 * Refuse (conversation_too_long) a run on a conversation that has no room for one more
 * message. A run may add several (tool calls and their results); the cap is checked before it
 * starts, so a conversation can end a run a few messages past it, never start one there.
 */
export function ensureRoomForRun(head: ConversationHead, max: number): void {
  if (head.messageCount + 1 > max) throw tooLong(head.messageCount, 1, max);
}

function messagesChannelOf(agent: RegisteredAgent): MessagesChannel {
  const channel = (agent.graph.channels as Record<string, unknown>).messages as Partial<MessagesChannel> & { lc_graph_name?: string } | undefined;
  if (!channel || typeof channel.fromCheckpoint !== "function" || channel.lc_graph_name === "DeltaChannel") {
    throw new ServiceError("validation_failed", { detail: `Agent "${agent.name}" has no messages list to append to.` });
  }
  return channel as MessagesChannel;
}
