import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  MemorySaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointTuple,
} from "@langchain/langgraph-checkpoint";

/**
 * The memory backend's saver: LangGraph's MemorySaver, storing with each checkpoint only the
 * channel values its `put` says changed (`newVersions`), as PostgresSaver stores only their blobs.
 * LangGraph's MemorySaver stores every value again with every checkpoint; LangGraph's own
 * validation suite asks for this ("only store channel_values that have changed").
 *
 * MemorySaver keeps the checkpoint without its values (metadata, versions, parent, writes, list
 * order and filters are all its own); the values are kept here, serialised one channel at a time.
 * A channel the checkpoint did not change (it is not in `newVersions`) is taken, at `put`, from the
 * checkpoint's parent when the parent has it at the same version: the parent's own value, or the
 * checkpoint the parent took it from. So each checkpoint points straight at the checkpoint holding
 * each value it did not change, and a read resolves it without walking the chain. A channel not
 * in `newVersions` that the parent does not hold at that version is not in the checkpoint read back,
 * as PostgresSaver leaves out a version it holds no blob for.
 *
 * Unlike PostgresSaver, which finds a value by (thread, namespace, channel, version) anywhere in the
 * thread, a value is only ever taken from the checkpoint's own ancestors. LangGraph's versions are
 * integers that two branches of a fork reuse, so a version alone does not name a value: a fork
 * written by `updateState` on an earlier checkpoint reads back the other branch's value on
 * PostgresSaver, and reads back its own here.
 *
 * Nothing here outlives the process, so no stored data changes format.
 */

type Serialized = readonly [type: string, bytes: Uint8Array];

/** What one checkpoint holds of its channels' values. */
interface CheckpointValues {
  readonly versions: ChannelVersions;
  /** The values it stored: the channels it changed, and any value without a version. */
  readonly own: ReadonlyMap<string, Serialized>;
  /** The channels it did not change: the id of the checkpoint (same thread and namespace) whose `own` holds each. */
  readonly carried: ReadonlyMap<string, string>;
}

/** A checkpoint's key within its thread. */
const keyOf = (namespace: string, checkpointId: string) => `${namespace}\u0000${checkpointId}`;

export class ChangedChannelsMemorySaver extends MemorySaver {
  /** Per thread, each checkpoint's values by keyOf. */
  private readonly threads = new Map<string, Map<string, CheckpointValues>>();

  override async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions = {}): Promise<RunnableConfig> {
    const threadId: unknown = config.configurable?.thread_id;
    const namespace: unknown = config.configurable?.checkpoint_ns ?? "";
    if (typeof threadId !== "string" || typeof namespace !== "string") return super.put(config, checkpoint, metadata);
    const versions = checkpoint.channel_versions ?? {};
    const own = new Map<string, Serialized>();
    for (const [channel, value] of Object.entries(checkpoint.channel_values ?? {})) {
      if (value === undefined || (Object.hasOwn(versions, channel) && !Object.hasOwn(newVersions, channel))) continue;
      own.set(channel, await this.serde.dumpsTyped(value));
    }
    const thread = this.threads.get(threadId) ?? new Map<string, CheckpointValues>();
    const parentId: unknown = config.configurable?.checkpoint_id;
    const parent = typeof parentId === "string" ? thread.get(keyOf(namespace, parentId)) : undefined;
    const carried = new Map<string, string>();
    if (parent) {
      for (const [channel, version] of Object.entries(versions)) {
        if (Object.hasOwn(newVersions, channel) || parent.versions[channel] !== version) continue;
        const holder = parent.own.has(channel) ? (parentId as string) : parent.carried.get(channel);
        if (holder !== undefined) carried.set(channel, holder);
      }
    }
    // Recorded before the checkpoint is, so no read finds the checkpoint without its values.
    const key = keyOf(namespace, checkpoint.id);
    const replaced = thread.get(key);
    thread.set(key, { versions: { ...versions }, own, carried });
    this.threads.set(threadId, thread);
    try {
      return await super.put(config, { ...checkpoint, channel_values: {} }, metadata);
    } catch (error) {
      if (replaced) thread.set(key, replaced);
      else thread.delete(key);
      throw error;
    }
  }

  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const tuple = await super.getTuple(config);
    return tuple && this.withValues(tuple);
  }

  override async *list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple> {
    for await (const tuple of super.list(config, options)) yield await this.withValues(tuple);
  }

  override async deleteThread(threadId: string): Promise<void> {
    await super.deleteThread(threadId);
    this.threads.delete(threadId);
  }

  /**
   * LangGraph's own walk over `getTuple` (MemorySaver's faster one reads its stored checkpoints
   * directly, which here hold no values).
   */
  override getDeltaChannelHistory(options: Parameters<BaseCheckpointSaver["getDeltaChannelHistory"]>[0]): ReturnType<BaseCheckpointSaver["getDeltaChannelHistory"]> {
    return BaseCheckpointSaver.prototype.getDeltaChannelHistory.call(this, options);
  }

  /** The tuple with its checkpoint's values: its own, and those it carried over from its ancestors. */
  private async withValues(tuple: CheckpointTuple): Promise<CheckpointTuple> {
    const threadId: unknown = tuple.config.configurable?.thread_id;
    const namespace: unknown = tuple.config.configurable?.checkpoint_ns ?? "";
    const thread = typeof threadId === "string" ? this.threads.get(threadId) : undefined;
    const stored = typeof namespace === "string" ? thread?.get(keyOf(namespace, tuple.checkpoint.id)) : undefined;
    if (!thread || !stored) return tuple;
    const values: Record<string, unknown> = {};
    for (const [channel, [type, bytes]] of stored.own) values[channel] = await this.serde.loadsTyped(type, bytes);
    for (const [channel, holder] of stored.carried) {
      const value = thread.get(keyOf(namespace as string, holder))?.own.get(channel);
      if (value) values[channel] = await this.serde.loadsTyped(value[0], value[1]);
    }
    // What MemorySaver added on reading (pending sends of a checkpoint older than format 4) stays.
    return { ...tuple, checkpoint: { ...tuple.checkpoint, channel_values: { ...values, ...tuple.checkpoint.channel_values } } };
  }
}
