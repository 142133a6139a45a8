import { isBaseMessage, type BaseMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  WRITES_IDX_MAP,
  type BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  type PendingWrite,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import { parseInstant } from "./timestamp.ts";
import type { ThreadCounts } from "./transfer-report.ts";

/**
 * One conversation copied from one checkpoint saver to another through their public interface:
 * every checkpoint of every namespace with its metadata, parent and pending writes, as the source
 * saver reads it back (agenthost's message store resolves its key ranges into messages on the way
 * out; its `put` turns them into rows on the way in). The savers' own `put` and `putWrites` write
 * them, so what lands is each saver's format by construction.
 */

/** A conversation whose stored data cannot be read back (unreadable values, missing message rows). */
export class UnreadableThreadError extends Error {
  constructor(
    readonly threadId: string,
    cause: unknown,
  ) {
    super(`conversation ${threadId} cannot be read back: ${reasonOf(cause)}`, { cause });
    this.name = "UnreadableThreadError";
  }
}

/**
 * A failure's reason without any stored content: the error's own message for the service's
 * errors, the serializer's "unknown type" (e.g. msgpack, which LangGraph.js cannot read), else
 * only the kind of error (JSON.parse quotes the text it choked on).
 */
function reasonOf(error: unknown): string {
  if (!(error instanceof Error)) return "unknown failure";
  const cause = error.cause;
  if (cause instanceof Error) {
    const type = /^Unknown serialization type: [\w-]{1,40}$/.exec(cause.message)?.[0];
    return `${error.message} (${type ?? cause.name})`;
  }
  return error.name === "SyntaxError" ? "stored data is not JSON" : error.message;
}

export interface CopyOptions {
  /** The thread id to write under (the source's id when exporting). */
  readonly to: string;
  /** Where to write; undefined reads and counts only (a dry run), which validates the whole thread. */
  readonly target?: BaseCheckpointSaver;
  /** Added to the `configurable` of each root checkpoint written (the owner, for the message store). */
  readonly configurable?: Readonly<Record<string, unknown>>;
  /**
   * Give equal messages one object across the thread's checkpoints, compared by this serializer's
   * bytes. The message store stores a message once per object it has not seen; a saver that revives
   * every checkpoint's list anew would otherwise have it store each list whole again.
   */
  readonly shareMessagesBy?: SerializerProtocol;
}

/** What a copy read: the counts, and for the conversation list its latest messages and time span. */
export interface CopiedThread extends ThreadCounts {
  /** The messages of the latest root checkpoint (empty when it has none). */
  readonly latestMessages: readonly unknown[];
  /** First and last root checkpoint times in milliseconds; undefined when none parses. */
  readonly createdAt?: number;
  readonly updatedAt?: number;
}

const decoder = new TextDecoder();

/**
 * Copy (or, without a target, read) every checkpoint of `from` in the order the source lists them,
 * newest first: no saver needs a checkpoint's parent stored before it. Each put names every channel
 * as changed, so each checkpoint is stored with all its values (PostgreSQL keeps the first blob of
 * each version). Writes keep their task, channel and order.
 * Throws UnreadableThreadError when the source cannot revive the thread.
 */
export async function copyThread(source: BaseCheckpointSaver, from: string, options: CopyOptions): Promise<CopiedThread> {
  const { target, to } = options;
  const namespaces = new Set<string>();
  const shared = new Map<string, BaseMessage>();
  let checkpoints = 0;
  let writes = 0;
  let latestMessages: readonly unknown[] | undefined;
  let first: number | undefined;
  let last: number | undefined;

  const tuples = source.list({ configurable: { thread_id: from } })[Symbol.asyncIterator]();
  for (;;) {
    let next: IteratorResult<CheckpointTuple>;
    try {
      next = await tuples.next();
    } catch (error) {
      throw new UnreadableThreadError(from, error);
    }
    if (next.done) break;
    const tuple = next.value;
    const namespace = String(tuple.config.configurable?.checkpoint_ns ?? "");
    let checkpoint = tuple.checkpoint;
    const pending = tuple.pendingWrites ?? [];
    checkpoints++;
    writes += pending.length;
    namespaces.add(namespace);
    if (namespace === "") {
      const messages: unknown = checkpoint.channel_values?.messages;
      latestMessages ??= Array.isArray(messages) ? messages : [];
      const at = typeof checkpoint.ts === "string" ? parseInstant(checkpoint.ts) : undefined;
      if (at !== undefined) {
        const ms = Number(at / 1_000_000n);
        first = first === undefined ? ms : Math.min(first, ms);
        last = last === undefined ? ms : Math.max(last, ms);
      }
      if (options.shareMessagesBy) checkpoint = await shareMessages(checkpoint, shared, options.shareMessagesBy);
    }
    if (!target) continue;

    // Every channel is named as new: the parent, written after its child, is not there to carry
    // unchanged values from (a saver storing only what a put changes would otherwise drop them).
    const newVersions: ChannelVersions = { ...checkpoint.channel_versions };
    const parent: unknown = tuple.parentConfig?.configurable?.checkpoint_id;
    const config: RunnableConfig = {
      configurable: {
        ...(namespace === "" ? options.configurable : {}),
        thread_id: to,
        checkpoint_ns: namespace,
        ...(typeof parent === "string" ? { checkpoint_id: parent } : {}),
      },
    };
    await target.put(config, checkpoint, tuple.metadata ?? ({} as CheckpointMetadata), newVersions);
    const stored: RunnableConfig = { configurable: { thread_id: to, checkpoint_ns: namespace, checkpoint_id: checkpoint.id } };
    for (const [taskId, group] of byTask(pending)) await target.putWrites(stored, group, taskId);
  }
  return {
    checkpoints,
    writes,
    namespaces: namespaces.size,
    messages: latestMessages?.length ?? 0,
    latestMessages: latestMessages ?? [],
    ...(first !== undefined ? { createdAt: first } : {}),
    ...(last !== undefined ? { updatedAt: last } : {}),
  };
}

/**
 * Pending writes as `putWrites` calls: per task, its special writes (errors, interrupts, resume
 * values: their index is fixed by channel) apart from its other writes, which take their index from
 * their position in the call, so each gets back the index it had (0, 1, … in the order read).
 */
function byTask(pending: readonly CheckpointPendingWrite[]): Array<[string, PendingWrite[]]> {
  const tasks = new Map<string, { special: PendingWrite[]; regular: PendingWrite[] }>();
  for (const [taskId, channel, value] of pending) {
    let task = tasks.get(taskId);
    if (!task) tasks.set(taskId, (task = { special: [], regular: [] }));
    (channel in WRITES_IDX_MAP ? task.special : task.regular).push([channel, value]);
  }
  const calls: Array<[string, PendingWrite[]]> = [];
  for (const [taskId, { special, regular }] of tasks) {
    if (regular.length) calls.push([taskId, regular]);
    if (special.length) calls.push([taskId, special]);
  }
  return calls;
}

/** The checkpoint with each message of its list replaced by the thread's first equal one. */
async function shareMessages(checkpoint: Checkpoint, shared: Map<string, BaseMessage>, serde: SerializerProtocol): Promise<Checkpoint> {
  const value: unknown = checkpoint.channel_values?.messages;
  if (!Array.isArray(value) || !value.every((item) => isBaseMessage(item))) return checkpoint;
  const messages: BaseMessage[] = [];
  for (const message of value as BaseMessage[]) {
    const [type, bytes] = await serde.dumpsTyped(message);
    const key = `${type}:${decoder.decode(bytes)}`;
    let same = shared.get(key);
    if (!same) shared.set(key, (same = message));
    messages.push(same);
  }
  return { ...checkpoint, channel_values: { ...checkpoint.channel_values, messages } };
}
