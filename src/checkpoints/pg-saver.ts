import type { RunnableConfig } from "@langchain/core/runnables";
import { WRITES_IDX_MAP, type ChannelVersions, type Checkpoint, type CheckpointMetadata, type PendingWrite, type SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import type pg from "pg";

/**
 * LangGraph's PostgresSaver, writing in one round trip what it writes in several. Its `put` sends
 * BEGIN, one INSERT per changed channel, the checkpoint and COMMIT (four to six round trips per
 * step); its `putWrites` sends BEGIN, one INSERT per write and COMMIT. Here each is a single
 * statement (the blobs as arrays unnested in a CTE of the checkpoint's INSERT), which PostgreSQL
 * runs atomically. Same tables, same rows, same conflict rules; reads are the library's.
 */
export class BatchedPostgresSaver extends PostgresSaver {
  private readonly upsertCheckpoint: string;
  private readonly upsertWrites: string;
  private readonly insertWrites: string;

  constructor(
    private readonly connections: pg.Pool,
    serde: SerializerProtocol,
    schema: string,
  ) {
    super(connections, serde, { schema });
    const table = (name: string) => `"${schema}".${name}`;
    this.upsertCheckpoint = `
WITH blobs AS (
  INSERT INTO ${table("checkpoint_blobs")} (thread_id, checkpoint_ns, channel, version, type, blob)
  SELECT $1, $2, b.channel, b.version, b.type, b.blob
  FROM unnest($3::text[], $4::text[], $5::text[], $6::bytea[]) AS b(channel, version, type, blob)
  ON CONFLICT (thread_id, checkpoint_ns, channel, version) DO NOTHING
)
INSERT INTO ${table("checkpoints")} (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint, metadata)
VALUES ($1, $2, $7, $8, $9, $10)
ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET checkpoint = EXCLUDED.checkpoint, metadata = EXCLUDED.metadata`;
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
    const { thread_id: threadId, checkpoint_ns: namespace = "", checkpoint_id: parentId } = config.configurable as Record<string, string | undefined>;
    const [blobs, serializedMetadata] = await Promise.all([
      this._dumpBlobs(threadId!, namespace, checkpoint.channel_values, newVersions),
      this._dumpMetadata(metadata),
    ]);
    await this.connections.query(this.upsertCheckpoint, [
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
    ]);
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
