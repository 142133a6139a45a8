import type Database from "better-sqlite3";
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  copyCheckpoint,
  WRITES_IDX_MAP,
  type BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointMetadata,
  type PendingWrite,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { sequentialWriter, type CheckpointWrite, type CheckpointWriter } from "./checkpoint-writer.ts";
import type { SqliteMessageRows } from "./message-rows.ts";
import { SqliteCommitGroup } from "./sqlite-commit-group.ts";
import type { SqliteThreadIndex } from "./thread-index-sql.ts";

/** Threads whose last written checkpoint a SqliteFileSaver remembers (a few hundred bytes each). */
const LAST_WRITTEN_KEPT = 4_096;

/** The version of each channel value a checkpoint holds. */
function heldVersions(checkpoint: Checkpoint): ChannelVersions {
  const versions = checkpoint.channel_versions ?? {};
  const held: ChannelVersions = {};
  for (const channel of Object.keys(checkpoint.channel_values ?? {})) {
    const version = versions[channel];
    if (version !== undefined) held[channel] = version;
  }
  return held;
}

/**
 * LangGraph's SqliteSaver, writing what it writes with statements prepared once (the library
 * prepares its INSERT again on every `put` and `putWrites`), and, as the message store's writer, a
 * checkpoint together with its new message rows and its conversation-list entry in one transaction:
 * one commit to the WAL where there were three. Its writes go through the connection's commit group
 * (sqlite-commit-group.ts): the checkpoints and writes of runs that reach them in the same tick
 * share one commit, and each `put` and `putWrites` resolves once its commit is done. Same tables, same rows, same conflict rules (a test
 * stores one conversation through both savers and compares the rows); reads are the library's.
 * Its schema is created when it is built, inside openSqliteFile's transaction, not on first use.
 *
 * It writes the library's tables with its own statements, so it relies on the library's schema and
 * conflict rules: the sqliteSaverWrites shortcut (src/config/library-shortcuts.ts), taken only at
 * the version of @langchain/langgraph-checkpoint-sqlite it was written for (see sqliteFileSavers).
 *
 * Like the library, each row holds the checkpoint whole, so LangGraph's SqliteSaver goes on reading
 * what it writes (with the shortcut off, in an older agenthost, in the maintenance export). What a
 * row holds follows `newVersions`, as LangGraph's savers are asked to: the values of the channels
 * the put names as changed, and of those it carries over unchanged from its parent, which must hold
 * them at the same version. A value the put neither changed nor could carry (no parent, or a parent
 * holding another version of it or none) is not stored. LangGraph's own steps never pass such a
 * value; only hand-made checkpoints do. docs/architecture.md, "Only the changed channel values".
 */
export class SqliteFileSaver extends SqliteSaver implements CheckpointWriter {
  private readonly insertCheckpoint: Database.Statement;
  /** A step's writes: replacing earlier ones when every channel is a special one (WRITES_IDX_MAP), else keeping them. */
  private readonly replaceWrites: Database.Statement;
  private readonly keepWrites: Database.Statement;
  private readonly selectCheckpoint: Database.Statement;
  private readonly group: SqliteCommitGroup;
  /**
   * Per thread and namespace (least recently written first), the last checkpoint written here and
   * the version of each value it holds: the parent of the thread's next put, most often.
   */
  private readonly lastWritten = new Map<string, { readonly id: string; readonly held: ChannelVersions }>();

  constructor(
    db: Database.Database,
    serde: SerializerProtocol,
    private readonly rows: SqliteMessageRows,
    private readonly threads: SqliteThreadIndex,
  ) {
    super(db, serde);
    this.group = SqliteCommitGroup.of(db);
    this.setup();
    this.insertCheckpoint = db.prepare(
      "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)",
    );
    const writes = (conflict: string) =>
      db.prepare(`INSERT ${conflict} INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`);
    this.replaceWrites = writes("OR REPLACE");
    this.keepWrites = writes("OR IGNORE");
    this.selectCheckpoint = db.prepare("SELECT type, checkpoint FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?");
  }

  override async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions = {}): Promise<RunnableConfig> {
    const threadId: unknown = config.configurable?.thread_id;
    if (typeof threadId !== "string" || !threadId) throw new Error(`Missing "thread_id" field in passed "config.configurable".`);
    return this.write({ config, checkpoint, metadata, newVersions, threadId, messages: [], listing: undefined });
  }

  async write(write: CheckpointWrite): Promise<RunnableConfig> {
    const { config, metadata, threadId } = write;
    const namespace = (config.configurable?.checkpoint_ns as string | undefined) ?? "";
    const parent: unknown = config.configurable?.checkpoint_id;
    const checkpoint = await this.storedValues(threadId, namespace, typeof parent === "string" ? parent : undefined, write.checkpoint, write.newVersions);
    const [[type, serialized], [metadataType, serializedMetadata]] = await Promise.all([
      this.serde.dumpsTyped(copyCheckpoint(checkpoint)),
      this.serde.dumpsTyped(metadata),
    ]);
    if (type !== metadataType) throw new Error("the checkpoint and its metadata were serialised to different types");
    const row = [threadId, namespace, checkpoint.id, parent ?? null, type, serialized, serializedMetadata];
    await this.group.commit(() => {
      this.rows.insertNow(threadId, write.messages);
      this.insertCheckpoint.run(row);
      if (write.listing) this.threads.touchNow(threadId, write.listing.owner, write.listing.summary, write.listing.now);
    });
    this.remember(threadId, namespace, checkpoint);
    return { configurable: { thread_id: threadId, checkpoint_ns: namespace, checkpoint_id: checkpoint.id } };
  }

  /**
   * The checkpoint with the values its row holds: every value `newVersions` names, or that has no
   * version, and each other value only where the parent holds that channel at the same version. A
   * parent that is named but not stored (deleted since) is taken to hold them: nothing is dropped
   * on a guess.
   */
  private async storedValues(threadId: string, namespace: string, parentId: string | undefined, checkpoint: Checkpoint, newVersions: ChannelVersions): Promise<Checkpoint> {
    const versions = checkpoint.channel_versions ?? {};
    let parent: { readonly held: ChannelVersions | undefined } | undefined;
    let values: Record<string, unknown> | undefined;
    for (const channel of Object.keys(checkpoint.channel_values ?? {})) {
      const version = versions[channel];
      if (version === undefined || channel in newVersions) continue;
      parent ??= { held: parentId === undefined ? {} : await this.heldBy(threadId, namespace, parentId) };
      if (parent.held === undefined || parent.held[channel] === version) continue;
      values ??= { ...checkpoint.channel_values };
      delete values[channel];
    }
    return values ? { ...checkpoint, channel_values: values } : checkpoint;
  }

  /** The version of each value checkpoint `id` holds; undefined when it is not stored. */
  private async heldBy(threadId: string, namespace: string, id: string): Promise<ChannelVersions | undefined> {
    const last = this.lastWritten.get(`${threadId}\u0000${namespace}`);
    if (last?.id === id) return last.held;
    const row = this.selectCheckpoint.get(threadId, namespace, id) as { type: string; checkpoint: Uint8Array } | undefined;
    if (!row) return undefined;
    return heldVersions((await this.serde.loadsTyped(row.type, row.checkpoint)) as Checkpoint);
  }

  private remember(threadId: string, namespace: string, checkpoint: Checkpoint): void {
    const key = `${threadId}\u0000${namespace}`;
    this.lastWritten.delete(key);
    this.lastWritten.set(key, { id: checkpoint.id, held: heldVersions(checkpoint) });
    if (this.lastWritten.size > LAST_WRITTEN_KEPT) this.lastWritten.delete(this.lastWritten.keys().next().value!);
  }

  override async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string): Promise<void> {
    const { thread_id: threadId, checkpoint_ns: namespace, checkpoint_id: checkpointId } = (config.configurable ?? {}) as Record<string, unknown>;
    if (!threadId) throw new Error("Missing thread_id field in config.configurable.");
    if (!checkpointId) throw new Error("Missing checkpoint_id field in config.configurable.");
    const statement = writes.every(([channel]) => channel in WRITES_IDX_MAP) ? this.replaceWrites : this.keepWrites;
    const rows = await Promise.all(
      writes.map(async ([channel, value], idx) => {
        const [type, serialized] = await this.serde.dumpsTyped(value);
        return [threadId, namespace, checkpointId, taskId, WRITES_IDX_MAP[channel] ?? idx, channel, type, serialized];
      }),
    );
    await this.group.commit(() => {
      for (const row of rows) statement.run(row);
    });
  }
}

/**
 * The SQLite file's saver and the message store's writer. With the sqliteSaverWrites shortcut, one
 * SqliteFileSaver is both. Without it, LangGraph's own SqliteSaver (its schema created on first
 * use, as the library does), and the message rows, the checkpoint and its list entry written one
 * after the other, in three transactions: the rows first, so a checkpoint never names rows that
 * are not stored, the list entry last, so the list never shows a checkpoint that was not; a failure
 * in between can leave rows no checkpoint names.
 */
export function sqliteFileSavers(
  db: Database.Database,
  serde: SerializerProtocol,
  rows: SqliteMessageRows,
  threads: SqliteThreadIndex,
  shortcut: boolean,
): { readonly saver: BaseCheckpointSaver; readonly writer: CheckpointWriter } {
  if (shortcut) {
    const saver = new SqliteFileSaver(db, serde, rows, threads);
    return { saver, writer: saver };
  }
  const saver = new SqliteSaver(db, serde);
  return { saver, writer: sequentialWriter(saver, rows, threads) };
}
