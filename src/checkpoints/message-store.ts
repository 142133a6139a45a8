import { performance } from "node:perf_hooks";
import { ChatMessage, isBaseMessage, type BaseMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  type PendingWrite,
} from "@langchain/langgraph-checkpoint";
import { sequentialWriter, type CheckpointWriter, type ThreadListing } from "./checkpoint-writer.ts";
import { conversationOwnerOf } from "../contract/conversation-owner-key.ts";
import type { MessageRows } from "./message-rows.ts";
import { summaryOf, type ThreadIndex, type ThreadOwner } from "./thread-index.ts";
import type { RewindTarget, ThreadRewinder } from "./thread-rewind.ts";

/**
 * The message store: a checkpoint saver layer that keeps each message of a conversation once and
 * stores a checkpoint's `messages` list as key ranges into those rows, so a turn costs the same at
 * 10 messages as at 5,000 and storage grows with the messages, not with their square.
 *
 * LangGraph writes the whole `messages` list with every checkpoint and revives all of it on every
 * read. Here a `put` serialises only the messages this worker has not stored yet (new objects, and
 * the messages the step's nodes wrote, which may be updates of stored ones) under fresh keys, and
 * writes `{ranges}` instead of the list; a `getTuple` resolves the ranges from a per-worker cache of
 * revived messages, reading and reviving only keys it has not seen. Keys are never reused and rows
 * never change (a run taken back empties the rows only it named, keeping their keys taken), so a
 * cached message is valid whichever worker or host wrote the checkpoint: no invalidation is needed,
 * only a bound on memory, and forgetting a thread whose run failed (its nodes may have changed cached
 * objects that were never saved). A worker counts new keys on from its own last checkpoint of a
 * thread; when another worker wrote rows since (a fork of an older checkpoint, a run taken back),
 * the write meets a taken key and is planned again from the stored rows.
 *
 * Like LangGraph's own channels, a change to a message is saved when a node returns it: a message
 * changed in place and not returned is not an update of the conversation.
 *
 * Only the root namespace's `messages` channel is stored this way, and only when it holds LangChain
 * messages; everything else (other channels, subgraphs, a delta channel, checkpoints written before
 * this layer) passes through unchanged, so both old and new checkpoints read.
 */

/** A checkpoint's `messages` value as stored: inclusive key ranges, in list order. */
export interface MessageRefs {
  readonly agenthost_messages: 1;
  readonly ranges: ReadonlyArray<readonly [number, number]>;
}

export function isMessageRefs(value: unknown): value is MessageRefs {
  return typeof value === "object" && value !== null && (value as { agenthost_messages?: unknown }).agenthost_messages === 1 && Array.isArray((value as { ranges?: unknown }).ranges);
}

/** How many messages a checkpoint's `messages` value holds: key ranges, or a list written inline. */
export function messageCountOf(value: unknown): number {
  if (isMessageRefs(value)) return countOf(value);
  return Array.isArray(value) ? value.length : 0;
}

/** How many messages the ranges hold. */
export function countOf(refs: MessageRefs): number {
  let total = 0;
  for (const [first, last] of refs.ranges) total += last - first + 1;
  return total;
}

/** The keys at positions [offset, offset + limit) of the list. */
export function keysAt(refs: MessageRefs, offset = 0, limit = Number.POSITIVE_INFINITY): number[] {
  const keys: number[] = [];
  let position = 0;
  const end = offset + limit;
  for (const [first, last] of refs.ranges) {
    const length = last - first + 1;
    if (position + length > offset && position < end) {
      const from = Math.max(offset - position, 0);
      const to = Math.min(end - position, length);
      for (let i = from; i < to; i++) keys.push(first + i);
    }
    position += length;
    if (position >= end) break;
  }
  return keys;
}

/** Consecutive keys folded into ranges. */
export function rangesOf(keys: readonly number[]): Array<[number, number]> {
  const ranges: Array<[number, number]> = [];
  for (const key of keys) {
    const last = ranges[ranges.length - 1];
    if (last && last[1] + 1 === key) last[1] = key;
    else ranges.push([key, key]);
  }
  return ranges;
}

/**
 * The role of the stand-in for a stored message that cannot be read back: history shows it as a
 * `custom` message whose custom_data.message_type is this, so one unreadable message hides nothing
 * else of its page and positions and totals stay right.
 */
export const UNREADABLE_ROLE = "unreadable";

function unreadableMessage(): ChatMessage {
  return new ChatMessage({
    role: UNREADABLE_ROLE,
    content: "This stored message could not be read back. Clear the conversation to run or extend it again.",
  });
}

/** A message row that a checkpoint refers to is missing: the conversation cannot be revived. */
export class MissingMessagesError extends Error {
  constructor(readonly threadId: string, readonly missing: number) {
    super(`${missing} stored messages of a conversation are missing`);
    this.name = "MissingMessagesError";
  }
}

/** Where a message object is stored: its thread and key. */
interface StoredAs {
  readonly threadId: string;
  readonly key: number;
}

/** The last list this worker stored or resolved for a thread: the next one usually starts with it. */
interface LastList {
  readonly ranges: string;
  readonly messages: readonly BaseMessage[];
  readonly keys: readonly number[];
}

/** What a checkpoint's `put` stores of its message list (see MessageStoreSaver.plan). */
interface StorePlan {
  readonly refs: MessageRefs;
  /** New rows: key and serialised message. */
  readonly rows: ReadonlyArray<readonly [number, string]>;
  /** The same rows' message objects, cached once the checkpoint is written. */
  readonly revived: ReadonlyArray<readonly [number, BaseMessage]>;
  /** The next free key after this checkpoint, when known. */
  readonly next: number | undefined;
  /** The new rows' keys were counted on from this worker's last write, not read from the stored rows. */
  readonly counted: boolean;
  readonly last: LastList;
}

/** Revived messages of one thread, by key (the part of the cache that holds memory). */
class ThreadMessages {
  readonly byKey = new Map<number, BaseMessage>();
  /** Messages the current step wrote (putWrites): stored anew, since they may update stored ones. */
  written = new Set<BaseMessage>();
  /** The next free key, valid while the next put's parent is `after` (no other writer came between). */
  next: { readonly after: string; readonly key: number } | undefined;
  last: LastList | undefined;
}

/** Rows read per query when a conversation is revived. */
const READ_SLICE = 1_000;
/**
 * Reviving one message costs tens of microseconds (LangChain's generic load): after this long the
 * event loop gets a turn, so a cold read of a huge conversation never blocks the worker for long.
 */
const REVIVE_BUDGET_MS = 8;

/** The ranges of an empty list, as `LastList.ranges` holds them. */
const NO_MESSAGES = JSON.stringify(rangesOf([]));

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));
const decoder = new TextDecoder();

export class MessageStoreSaver extends BaseCheckpointSaver {
  /** Threads in least-recently-used order (a Map iterates in insertion order). */
  private readonly threads = new Map<string, ThreadMessages>();
  /** Latest checkpoints read for runs about to start (readHead), until their graph reads them. */
  private readonly heads = new Map<string, { tuple: CheckpointTuple | undefined }>();
  private cachedMessages = 0;
  /**
   * The key of every message object this worker stored or revived. Weak, so it costs no memory of
   * its own, and it outlives a thread's eviction from the cache: a run still holding the objects
   * never stores them twice.
   */
  private readonly storedAs = new WeakMap<BaseMessage, StoredAs>();

  constructor(
    readonly inner: BaseCheckpointSaver,
    readonly rows: MessageRows,
    /** Revived messages kept per worker, across threads. */
    private readonly cacheSize: number,
    /** The conversation list: written with each checkpoint that changes the messages (see thread-index.ts). */
    readonly index?: ThreadIndex,
    /** Where checkpoints go with their new rows and listing; a database's writes all three at once. */
    private readonly writer: CheckpointWriter = sequentialWriter(inner, rows, index),
    /** How a thread is taken back to an earlier checkpoint (see `rewind`); none: it cannot be. */
    private readonly rewinder?: ThreadRewinder,
  ) {
    super(inner.serde);
  }

  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const held = this.heldHead(config);
    if (held) return held.tuple;
    const tuple = await this.inner.getTuple(config);
    return tuple && this.resolve(tuple);
  }

  /**
   * Read the thread's latest root checkpoint for a run about to start on it, and keep it for the
   * run's graph: its first read of the same checkpoint takes it instead of reading again (one read
   * of the checkpoint per run, not two). The caller holds the conversation's lock from here until
   * `releaseHead`, so nothing can write the thread in between; any write to it here drops the kept
   * read anyway.
   */
  async readHead(threadId: string): Promise<CheckpointTuple | undefined> {
    const tuple = await this.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: "" } });
    this.heads.set(threadId, { tuple });
    return tuple;
  }

  /** The run that read the head has ended (or its graph has read it): forget the kept read. */
  releaseHead(threadId: string): void {
    this.heads.delete(threadId);
  }

  /** The kept head for a read of the latest root checkpoint of its thread, taken once. */
  private heldHead(config: RunnableConfig): { tuple: CheckpointTuple | undefined } | undefined {
    if (this.heads.size === 0) return undefined;
    const configurable = config.configurable;
    const threadId: unknown = configurable?.thread_id;
    if (typeof threadId !== "string" || (configurable?.checkpoint_ns ?? "") !== "" || configurable?.checkpoint_id !== undefined) return undefined;
    const held = this.heads.get(threadId);
    if (held) this.heads.delete(threadId);
    return held;
  }

  override async *list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple> {
    for await (const tuple of this.inner.list(config, options)) yield await this.resolve(tuple);
  }

  override async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    const threadId: unknown = config.configurable?.thread_id;
    if (this.heads.size > 0 && typeof threadId === "string") this.heads.delete(threadId);
    if (typeof threadId !== "string") return this.inner.put(config, checkpoint, metadata, newVersions);
    const namespace: unknown = config.configurable?.checkpoint_ns ?? "";
    const value: unknown = checkpoint.channel_values?.messages;
    const parent: unknown = config.configurable?.checkpoint_id;
    const parentId = typeof parent === "string" ? parent : undefined;
    if (namespace !== "" || !Array.isArray(value)) return this.writer.write({ config, checkpoint, metadata, newVersions, threadId, messages: [], listing: undefined });
    const written = this.threads.get(threadId)?.written;
    let plan = await this.plan(threadId, parentId, value);
    try {
      return await this.written(config, checkpoint, metadata, newVersions, threadId, value, plan);
    } catch (error) {
      // Keys counted on from this worker's last checkpoint of the thread, but another worker wrote
      // rows since (a fork of an older checkpoint, or a run taken back): count from the stored rows.
      if (!plan?.counted || !plan.rows.length) throw error;
      const thread = this.thread(threadId);
      thread.next = undefined;
      if (written) thread.written = written;
      plan = await this.plan(threadId, parentId, value);
      return this.written(config, checkpoint, metadata, newVersions, threadId, value, plan);
    }
  }

  /** Write the checkpoint with its message list stored as `plan` says (undefined: as it is). */
  private async written(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
    threadId: string,
    value: unknown[],
    plan: StorePlan | undefined,
  ): Promise<RunnableConfig> {
    let listing: ThreadListing | undefined;
    if (plan) {
      checkpoint = { ...checkpoint, channel_values: { ...checkpoint.channel_values, messages: plan.refs } };
      // A thread this worker knows nothing of is taken to have had no messages: the empty input step
      // of a new conversation changes nothing the list shows (one listing write fewer per new conversation).
      const before = this.threads.get(threadId)?.last?.ranges ?? NO_MESSAGES;
      const owner = plan.last.ranges !== before ? conversationOwnerOf(config.configurable) : undefined;
      if (owner) listing = { owner, summary: summaryOf(value), now: Date.now() };
    }
    const saved = await this.writer.write({ config, checkpoint, metadata, newVersions, threadId, messages: plan?.rows ?? [], listing });
    if (plan) this.settle(threadId, checkpoint.id, plan);
    return saved;
  }

  override putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void> {
    const threadId: unknown = config.configurable?.thread_id;
    if (this.heads.size > 0 && typeof threadId === "string") this.heads.delete(threadId);
    const thread = typeof threadId === "string" && (config.configurable?.checkpoint_ns ?? "") === "" ? this.threads.get(threadId) : undefined;
    if (thread) {
      for (const [channel, value] of writes) {
        if (channel !== "messages") continue;
        for (const item of Array.isArray(value) ? value : [value]) if (isBaseMessage(item)) thread.written.add(item);
      }
    }
    return this.inner.putWrites(config, writes, taskId, taskPath);
  }

  override async deleteThread(threadId: string): Promise<void> {
    await this.inner.deleteThread(threadId);
    await this.rows.deleteThread(threadId);
    await this.index?.deleteThread(threadId);
    this.forget(threadId);
  }

  /**
   * Take the thread back to `base`, the checkpoint a run started from (null: the thread had none),
   * as if the run never ran (see thread-rewind.ts): the checkpoints after it go, with their writes
   * and the writes the run added to `base`; the message rows only they named are emptied; the
   * conversation list shows the thread as it is again. The caller holds the conversation's lock.
   */
  async rewind(threadId: string, base: string | null, keepWrites: RewindTarget["keepWrites"], owner: ThreadOwner | undefined): Promise<void> {
    if (!this.rewinder) throw new Error("this checkpoint store cannot take a thread back");
    const named = new Set<number>();
    let kept: CheckpointTuple | undefined;
    for await (const { tuple, keys } of this.storedLists(threadId)) {
      if (base !== null && tuple.checkpoint.id <= base) {
        kept = tuple;
        for (const key of keys) named.delete(key);
        break;
      }
      for (const key of keys) named.add(key);
    }
    await this.rewinder.rewind({ threadId, base, keepWrites, releasedKeys: [...named] });
    this.forget(threadId);
    if (!owner || !this.index) return;
    if (!kept) await this.index.deleteThread(threadId);
    else {
      const messages: unknown = (await this.resolve(kept)).checkpoint.channel_values?.messages;
      await this.index.touch(threadId, owner, summaryOf(Array.isArray(messages) ? messages : []), Date.now());
    }
  }

  /**
   * Keep only the thread's latest `keep` root checkpoints (compaction, see thread-rewind.ts): older
   * ones go in every namespace, with their writes; message rows only they named are emptied.
   * Returns how many root checkpoints went. The caller holds the conversation's lock.
   */
  async prune(threadId: string, keep: number): Promise<number> {
    if (!this.rewinder) throw new Error("this checkpoint store cannot compact a thread");
    const kept = new Set<number>();
    const dropped = new Set<number>();
    let keepFrom: string | undefined;
    let seen = 0;
    for await (const { tuple, keys } of this.storedLists(threadId)) {
      const into = seen++ < keep ? kept : dropped;
      if (into === kept) keepFrom = tuple.checkpoint.id;
      for (const key of keys) into.add(key);
    }
    const gone = Math.max(0, seen - keep);
    if (gone === 0 || keepFrom === undefined) return 0;
    for (const key of kept) dropped.delete(key);
    await this.rewinder.prune({ threadId, keepFrom, releasedKeys: [...dropped] });
    return gone;
  }

  /** The thread's root checkpoints as stored, newest first, with the message keys each names (no message is read). */
  private async *storedLists(threadId: string): AsyncGenerator<{ readonly tuple: CheckpointTuple; readonly keys: number[] }> {
    for await (const tuple of this.inner.list({ configurable: { thread_id: threadId, checkpoint_ns: "" } })) {
      const value: unknown = tuple.checkpoint.channel_values?.messages;
      yield { tuple, keys: isMessageRefs(value) ? keysAt(value) : [] };
    }
  }

  /**
   * Drop the thread's revived messages: its run failed, and its nodes may have changed cached
   * objects that were never saved. The next read revives the thread from its rows.
   */
  discard(threadId: string): void {
    this.forget(threadId);
  }

  override getNextVersion(current: number | undefined): number {
    return this.inner.getNextVersion(current);
  }

  override getDeltaChannelHistory(
    options: Parameters<BaseCheckpointSaver["getDeltaChannelHistory"]>[0],
  ): ReturnType<BaseCheckpointSaver["getDeltaChannelHistory"]> {
    return this.inner.getDeltaChannelHistory(options);
  }

  /**
   * Messages [offset, offset + limit) of the thread's latest root checkpoint and their total,
   * reviving only that page. Undefined when the latest checkpoint's list is not the whole state
   * (a pending update without a task), so the caller asks the graph. The checkpoint's pending
   * writes come along (where a paused run's interrupts are).
   */
  async readPage(
    threadId: string,
    offset: number,
    limit: number,
  ): Promise<{ messages: BaseMessage[]; total: number; pendingWrites: CheckpointPendingWrite[] } | undefined> {
    const tuple = await this.inner.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: "" } });
    if (!tuple) return { messages: [], total: 0, pendingWrites: [] };
    const pendingWrites = tuple.pendingWrites ?? [];
    if (pendingWrites.some(([task, channel]) => channel === "messages" && task === NULL_TASK_ID)) return undefined;
    const value: unknown = tuple.checkpoint.channel_values?.messages;
    if (isMessageRefs(value)) return { messages: await this.load(threadId, keysAt(value, offset, limit), true), total: countOf(value), pendingWrites };
    const list = Array.isArray(value) ? value.filter(isBaseMessage) : [];
    return { messages: list.slice(offset, offset + limit), total: list.length, pendingWrites };
  }

  private async resolve(tuple: CheckpointTuple): Promise<CheckpointTuple> {
    const value: unknown = tuple.checkpoint.channel_values?.messages;
    const threadId: unknown = tuple.config.configurable?.thread_id;
    if (!isMessageRefs(value) || typeof threadId !== "string") return tuple;
    const messages = await this.loadList(threadId, value);
    return { ...tuple, checkpoint: { ...tuple.checkpoint, channel_values: { ...tuple.checkpoint.channel_values, messages } } };
  }

  /** The whole list of a checkpoint, reusing the last list resolved or stored when the ranges are the same. */
  private async loadList(threadId: string, refs: MessageRefs): Promise<BaseMessage[]> {
    const ranges = JSON.stringify(refs.ranges);
    const last = this.threads.get(threadId)?.last;
    if (last?.ranges === ranges) {
      this.thread(threadId);
      return [...last.messages];
    }
    const keys = keysAt(refs);
    const messages = await this.load(threadId, keys);
    this.thread(threadId).last = { ranges, messages, keys };
    return [...messages];
  }

  /**
   * The messages under `keys`, in order: cached ones as they are, the rest read and revived. With
   * `tolerant` (history pages), a row that cannot be revived becomes a stand-in message (not cached);
   * otherwise its error is thrown (a run cannot go on from an unreadable conversation).
   */
  private async load(threadId: string, keys: readonly number[], tolerant = false): Promise<BaseMessage[]> {
    const thread = this.thread(threadId);
    const missing: number[] = [];
    for (const key of keys) if (!thread.byKey.has(key)) missing.push(key);
    let since = performance.now();
    for (let start = 0; start < missing.length; start += READ_SLICE) {
      const slice = missing.slice(start, start + READ_SLICE);
      const texts = await this.rows.read(threadId, slice);
      if (texts.size !== slice.length && !tolerant) throw new MissingMessagesError(threadId, slice.length - texts.size);
      for (const key of slice) {
        if (performance.now() - since > REVIVE_BUDGET_MS) {
          await yieldToEventLoop();
          since = performance.now();
        }
        const text = texts.get(key);
        if (text === undefined) continue;
        let revived: unknown;
        try {
          revived = await this.serde.loadsTyped("json", text);
        } catch (error) {
          if (!tolerant) throw error;
          continue;
        }
        if (isBaseMessage(revived)) this.remember(threadId, thread, key, revived);
        else if (!tolerant) throw new MissingMessagesError(threadId, 1);
      }
    }
    const out = new Array<BaseMessage>(keys.length);
    for (let i = 0; i < keys.length; i++) out[i] = thread.byKey.get(keys[i]!) ?? unreadableMessage();
    this.trim(threadId);
    return out;
  }

  /**
   * What storing the list takes: the rows of the messages this thread has not stored yet, under
   * fresh keys, and the list as key ranges. Undefined when the list holds something other than
   * messages (it is then stored as LangGraph stores it). Changes nothing until `settle`, once the
   * checkpoint is written.
   */
  private async plan(threadId: string, parent: string | undefined, messages: readonly unknown[]): Promise<StorePlan | undefined> {
    const thread = this.thread(threadId);
    const { written, last } = thread;
    thread.written = new Set();
    const keys = new Array<number>(messages.length);
    const fresh: number[] = [];
    for (let i = 0; i < messages.length; i++) {
      const message = messages[i];
      // Most of a new list is the last list, object for object: no lookup needed.
      if (last && message === last.messages[i]) {
        keys[i] = last.keys[i]!;
        continue;
      }
      if (!isBaseMessage(message)) return undefined;
      const stored = this.storedAs.get(message);
      if (stored?.threadId === threadId && !written.has(message) && thread.byKey.get(stored.key) === message) keys[i] = stored.key;
      else fresh.push(i);
    }
    // A message the step's nodes returned is stored anew even where the list kept it in place: it
    // may be a stored message they updated in place. (Few per step: a scan each, no lookup per message.)
    if (last) {
      for (const message of written) {
        for (let i = messages.indexOf(message); i >= 0; i = messages.indexOf(message, i + 1)) {
          if (message === last.messages[i]) fresh.push(i);
        }
      }
      fresh.sort((a, b) => a - b);
    }
    let next = thread.next && thread.next.after === parent ? thread.next.key : undefined;
    const counted = next !== undefined;
    const rows: Array<readonly [number, string]> = [];
    const revived: Array<readonly [number, BaseMessage]> = [];
    if (fresh.length) {
      next ??= (await this.rows.maxKey(threadId)) + 1;
      for (const i of fresh) {
        const [type, bytes] = await this.serde.dumpsTyped(messages[i]);
        if (type !== "json") throw new Error(`the checkpoint serializer wrote a message as ${type}, not json`);
        rows.push([next, decoder.decode(bytes)]);
        revived.push([next, messages[i] as BaseMessage]);
        keys[i] = next++;
      }
    }
    const ranges = rangesOf(keys);
    return {
      refs: { agenthost_messages: 1, ranges },
      rows,
      revived,
      next,
      counted,
      // A copy: a node that pushes onto the channel's array must not change what this worker remembers.
      last: { ranges: JSON.stringify(ranges), messages: [...(messages as BaseMessage[])], keys },
    };
  }

  /** Remember what a plan stored, now that its checkpoint is written. */
  private settle(threadId: string, checkpointId: string, plan: StorePlan): void {
    const thread = this.thread(threadId);
    for (const [key, message] of plan.revived) this.remember(threadId, thread, key, message);
    thread.next = plan.next === undefined ? undefined : { after: checkpointId, key: plan.next };
    thread.last = plan.last;
    this.trim(threadId);
  }

  /** The thread's cache, marked most recently used. */
  private thread(threadId: string): ThreadMessages {
    let thread = this.threads.get(threadId);
    if (thread) this.threads.delete(threadId);
    else thread = new ThreadMessages();
    this.threads.set(threadId, thread);
    return thread;
  }

  private remember(threadId: string, thread: ThreadMessages, key: number, message: BaseMessage): void {
    if (!thread.byKey.has(key)) this.cachedMessages++;
    thread.byKey.set(key, message);
    this.storedAs.set(message, { threadId, key });
  }

  private forget(threadId: string): void {
    this.heads.delete(threadId);
    const thread = this.threads.get(threadId);
    if (!thread) return;
    this.cachedMessages -= thread.byKey.size;
    this.threads.delete(threadId);
  }

  /** Evict least recently used threads past the cache size, never the one just used. */
  private trim(current: string): void {
    for (const threadId of this.threads.keys()) {
      if (this.cachedMessages <= this.cacheSize || threadId === current) break;
      this.forget(threadId);
    }
  }
}

/** LangGraph's task id for writes that belong to no task (Command updates). */
export const NULL_TASK_ID = "00000000-0000-0000-0000-000000000000";
