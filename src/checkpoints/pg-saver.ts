import type { RunnableConfig } from "@langchain/core/runnables";
import {
  WRITES_IDX_MAP,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointMetadata,
  type PendingWrite,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import type pg from "pg";
import { sequentialWriter, type CheckpointWrite, type CheckpointWriter } from "./checkpoint-writer.ts";
import { MESSAGE_TABLE, type MessageRows } from "./message-rows.ts";
import { THREAD_TABLE, type ThreadIndex } from "./thread-index.ts";
import { COLUMNS as THREAD_COLUMNS, UPSERT_TAIL as THREAD_UPSERT_TAIL } from "./thread-index-sql.ts";

/**
 * LangGraph's PostgresSaver, writing in one round trip what it writes in several. Its `put` sends
 * BEGIN, one INSERT per changed channel, the checkpoint and COMMIT (four to six round trips per
 * step); its `putWrites` sends BEGIN, one INSERT per write and COMMIT. Here each is a single
 * statement (the blobs as arrays unnested in a CTE of the checkpoint's INSERT), which PostgreSQL
 * runs atomically. Same tables, same rows, same conflict rules; reads are the library's.
 *
 * As the message store's writer, the same statement also stores the checkpoint's new message rows
 * and its conversation-list entry: one round trip, all or nothing.
 *
 * It writes the library's tables with its own statements and serialises with the library's
 * protected `_dump*` methods: the postgresSaverWrites shortcut (src/config/library-shortcuts.ts),
 * taken only at the version of @langchain/langgraph-checkpoint-postgres it was written for.
 */
export class BatchedPostgresSaver extends PostgresSaver implements CheckpointWriter {
  private readonly upsertCheckpoint: string;
  private readonly upsertCheckpointWithMessages: string;
  private readonly upsertWrites: string;
  private readonly insertWrites: string;

  constructor(
    private readonly connections: pg.Pool,
    serde: SerializerProtocol,
    schema: string,
  ) {
    super(connections, serde, { schema });
    const table = (name: string) => `"${schema}".${name}`;
    // $1 thread, $2 namespace; $3-$6 blobs; $7 checkpoint id, $8 parent, $9 checkpoint, $10 metadata.
    const blobs = `
blobs AS (
  INSERT INTO ${table("checkpoint_blobs")} (thread_id, checkpoint_ns, channel, version, type, blob)
  SELECT $1, $2, b.channel, b.version, b.type, b.blob
  FROM unnest($3::text[], $4::text[], $5::text[], $6::bytea[]) AS b(channel, version, type, blob)
  ON CONFLICT (thread_id, checkpoint_ns, channel, version) DO NOTHING
)`;
    // The message store's part: $11-$12 message rows; $13-$18 the listing (none when $13, its user, is null).
    const messages = `
messages AS (
  INSERT INTO ${table(MESSAGE_TABLE)} (thread_id, message_key, message)
  SELECT $1, m.key, m.message FROM unnest($11::int[], $12::text[]) AS m(key, message)
), listing AS (
  INSERT INTO ${table(THREAD_TABLE)} AS ${THREAD_TABLE} (${THREAD_COLUMNS})
  SELECT $1, $13::text, $14::text, $15::text, $16::text, $17::int, $18::bigint, $18::bigint WHERE $13::text IS NOT NULL
  ${THREAD_UPSERT_TAIL}
)`;
    const checkpoint = `
INSERT INTO ${table("checkpoints")} (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint, metadata)
VALUES ($1, $2, $7, $8, $9, $10)
ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET checkpoint = EXCLUDED.checkpoint, metadata = EXCLUDED.metadata`;
    this.upsertCheckpoint = `WITH ${blobs}${checkpoint}`;
    this.upsertCheckpointWithMessages = `WITH ${blobs},${messages}${checkpoint}`;
    const writes = `
INSERT INTO ${table("checkpoint_writes")} (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob)
SELECT $1, $2, $3, $4, w.idx, w.channel, w.type, w.blob
FROM unnest($5::int[], $6::text[], $7::text[], $8::bytea[]) AS w(idx, channel, type, blob)
ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)`;
    this.upsertWrites = `${writes} DO UPDATE SET channel = EXCLUDED.channel, type = EXCLUDED.type, blob = EXCLUDED.blob`;
    this.insertWrites = `${writes} DO NOTHING`;
  }

  override async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    if (config.configurable === undefined) throw new Error(`Missing "configurable" field in "config" param`);
    const threadId = config.configurable.thread_id as string;
    return this.write({ config, checkpoint, metadata, newVersions, threadId, messages: [], listing: undefined });
  }

  async write({ config, checkpoint, metadata, newVersions, threadId, messages, listing }: CheckpointWrite): Promise<RunnableConfig> {
    const { checkpoint_ns: namespace = "", checkpoint_id: parentId } = (config.configurable ?? {}) as Record<string, string | undefined>;
    const [blobs, serializedMetadata] = await Promise.all([
      this._dumpBlobs(threadId, namespace, checkpoint.channel_values, newVersions),
      this._dumpMetadata(metadata),
    ]);
    const params = [
      threadId,
      namespace,
      blobs.map((b) => b[2]),
      blobs.map((b) => b[3]),
      blobs.map((b) => b[4]),
      blobs.map((b) => (b[5] === undefined ? null : Buffer.from(b[5].buffer, b[5].byteOffset, b[5].byteLength))),
      checkpoint.id,
      parentId,
      this._dumpCheckpoint(checkpoint),
      serializedMetadata,
    ];
    if (!messages.length && !listing) await this.connections.query(this.upsertCheckpoint, params);
    else {
      await this.connections.query(this.upsertCheckpointWithMessages, [
        ...params,
        messages.map(([key]) => key),
        messages.map(([, text]) => text),
        listing?.owner.userId ?? null,
        listing?.owner.agentId ?? null,
        listing?.owner.threadId ?? null,
        listing?.summary.title ?? null,
        listing?.summary.messageCount ?? null,
        listing?.now ?? null,
      ]);
    }
    return { configurable: { thread_id: threadId, checkpoint_ns: namespace, checkpoint_id: checkpoint.id } };
  }

  override async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string): Promise<void> {
    if (writes.length === 0) return;
    const { thread_id: threadId, checkpoint_ns: namespace, checkpoint_id: checkpointId } = (config.configurable ?? {}) as Record<string, string>;
    const rows = await this._dumpWrites(threadId!, namespace!, checkpointId!, taskId, writes);
    await this.connections.query(writes.every(([channel]) => channel in WRITES_IDX_MAP) ? this.upsertWrites : this.insertWrites, [
      threadId,
      namespace,
      checkpointId,
      taskId,
      rows.map((r) => r[4]),
      rows.map((r) => r[5]),
      rows.map((r) => r[6]),
      rows.map((r) => Buffer.from(r[7].buffer, r[7].byteOffset, r[7].byteLength)),
    ]);
  }
}

/** The PostgreSQL saver: the batched one with the postgresSaverWrites shortcut, else LangGraph's PostgresSaver. */
export function postgresSaver(connections: pg.Pool, serde: SerializerProtocol, schema: string, shortcut: boolean): PostgresSaver {
  return shortcut ? new BatchedPostgresSaver(connections, serde, schema) : new PostgresSaver(connections, serde, { schema });
}

/**
 * The message store's writer for `saver`: the batched saver itself (one statement), or for the
 * library's saver the message rows, the checkpoint and its list entry one after the other (the rows
 * first, the list entry last; a failure in between can leave rows no checkpoint names).
 */
export function postgresWriter(saver: PostgresSaver, rows: MessageRows, threads: ThreadIndex): CheckpointWriter {
  return saver instanceof BatchedPostgresSaver ? saver : sequentialWriter(saver, rows, threads);
}
