import type Database from "better-sqlite3";
import type pg from "pg";
import type { BaseCheckpointSaver, CheckpointTuple, PendingWrite } from "@langchain/langgraph-checkpoint";
import { MESSAGE_TABLE, type MemoryMessageRows } from "./message-rows.ts";
import { inTransaction } from "./pg-transaction.ts";
import { SqliteCommitGroup } from "./sqlite-commit-group.ts";

/**
 * Taking a thread back to where a run found it (the Platform API's `rollback`): every checkpoint
 * written after the run's base goes, in every namespace, with its pending writes (and, on
 * PostgreSQL, the channel blobs no remaining checkpoint names); the writes the run added to the base
 * itself go too (a resumed run writes its resume value and its tasks' results there). Message rows
 * only the removed checkpoints named are emptied, never deleted: their keys stay taken, so a key is
 * still never reused and every worker's cache of revived messages stays valid without a word to it.
 */
export interface RewindTarget {
  /** The storage key (checkpoint thread id). */
  readonly threadId: string;
  /** The checkpoint the run started from; null when the thread had none (everything goes). */
  readonly base: string | null;
  /** The base's pending writes from before the run, as (task id, channel): kept; its others go. */
  readonly keepWrites: ReadonlyArray<readonly [string, string]>;
  /** Message rows only the removed checkpoints named: emptied. */
  readonly releasedKeys: readonly number[];
}

/**
 * Compaction: a thread keeps only its latest checkpoints. Everything older than `keepFrom` (the
 * oldest root checkpoint kept) goes, in every namespace, with its writes; message rows only the
 * removed checkpoints named are emptied, as a rewind's are.
 */
export interface PruneTarget {
  readonly threadId: string;
  readonly keepFrom: string;
  readonly releasedKeys: readonly number[];
}

export interface ThreadRewinder {
  rewind(target: RewindTarget): Promise<void>;
  prune(target: PruneTarget): Promise<void>;
}

/** The text an emptied message row holds: no message, only its key kept taken. */
export const RELEASED_MESSAGE = "";

interface WriteKey {
  readonly task_id: string;
  readonly idx: number;
  readonly channel: string;
}

/**
 * Which of the base's stored writes the run added: each (task, channel) kept as often as it was
 * there before the run, in idx order within its task; the rest are the run's.
 */
export function addedWrites<W extends WriteKey>(stored: readonly W[], keep: RewindTarget["keepWrites"]): W[] {
  const left = new Map<string, number>();
  for (const [task, channel] of keep) {
    const key = JSON.stringify([task, channel]);
    left.set(key, (left.get(key) ?? 0) + 1);
  }
  const ordered = [...stored].sort((a, b) => (a.task_id < b.task_id ? -1 : a.task_id > b.task_id ? 1 : a.idx - b.idx));
  const added: W[] = [];
  for (const write of ordered) {
    const key = JSON.stringify([write.task_id, write.channel]);
    const count = left.get(key) ?? 0;
    if (count > 0) left.set(key, count - 1);
    else added.push(write);
  }
  return added;
}

/**
 * SQLite (the library's `checkpoints` and `writes` tables, and the message rows): one transaction,
 * a member of the connection's commit group (sqlite-commit-group.ts). Its statements are prepared
 * at first use: the library's saver creates its tables on its own first use.
 */
export class SqliteThreadRewinder implements ThreadRewinder {
  private statements: { rewind: (target: RewindTarget) => void; prune: (target: PruneTarget) => void } | undefined;

  private readonly group: SqliteCommitGroup;

  constructor(private readonly db: Database.Database) {
    this.group = SqliteCommitGroup.of(db);
  }

  async rewind(target: RewindTarget): Promise<void> {
    const { rewind } = (this.statements ??= this.prepare());
    await this.group.commit(() => rewind(target));
  }

  async prune(target: PruneTarget): Promise<void> {
    const { prune } = (this.statements ??= this.prepare());
    await this.group.commit(() => prune(target));
  }

  /** The two operations' statements. */
  private prepare(): NonNullable<SqliteThreadRewinder["statements"]> {
    const { db } = this;
    const checkpoints = (op: ">" | "<") => db.prepare(`DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_id ${op} ?`);
    const writes = (op: ">" | "<") => db.prepare(`DELETE FROM writes WHERE thread_id = ? AND checkpoint_id ${op} ?`);
    const [laterCheckpoints, laterWrites, olderCheckpoints, olderWrites] = [checkpoints(">"), writes(">"), checkpoints("<"), writes("<")];
    const baseWrites = db.prepare("SELECT task_id, idx, channel FROM writes WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ?");
    const dropWrite = db.prepare("DELETE FROM writes WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ? AND task_id = ? AND idx = ?");
    const releaseRow = db.prepare(`UPDATE ${MESSAGE_TABLE} SET message = ? WHERE thread_id = ? AND message_key = ?`);
    const release = (threadId: string, keys: readonly number[]) => {
      for (const key of keys) releaseRow.run(RELEASED_MESSAGE, threadId, key);
    };
    return {
      rewind: (target: RewindTarget) => {
        const { threadId, base } = target;
        // Checkpoint ids are time-ordered, and every id after the base's was written after it: by the run.
        laterCheckpoints.run(threadId, base ?? "");
        laterWrites.run(threadId, base ?? "");
        if (base !== null) {
          for (const write of addedWrites(baseWrites.all(threadId, base) as WriteKey[], target.keepWrites)) dropWrite.run(threadId, base, write.task_id, write.idx);
        }
        release(threadId, target.releasedKeys);
      },
      prune: (target: PruneTarget) => {
        olderCheckpoints.run(target.threadId, target.keepFrom);
        olderWrites.run(target.threadId, target.keepFrom);
        release(target.threadId, target.releasedKeys);
      },
    };
  }
}

/** PostgreSQL (the library's tables in the saver's schema, and the message rows): one transaction. */
export class PostgresThreadRewinder implements ThreadRewinder {
  constructor(
    private readonly pool: pg.Pool,
    private readonly schema: string,
  ) {}

  async rewind(target: RewindTarget): Promise<void> {
    const table = (name: string) => `"${this.schema}".${name}`;
    const { threadId, base } = target;
    await inTransaction(this.pool, async (client) => {
      await client.query(`DELETE FROM ${table("checkpoints")} WHERE thread_id = $1 AND checkpoint_id > $2`, [threadId, base ?? ""]);
      await client.query(`DELETE FROM ${table("checkpoint_writes")} WHERE thread_id = $1 AND checkpoint_id > $2`, [threadId, base ?? ""]);
      if (base !== null) {
        const { rows } = await client.query<WriteKey>(
          `SELECT task_id, idx, channel FROM ${table("checkpoint_writes")} WHERE thread_id = $1 AND checkpoint_ns = '' AND checkpoint_id = $2`,
          [threadId, base],
        );
        const added = addedWrites(rows, target.keepWrites);
        if (added.length) {
          await client.query(
            `DELETE FROM ${table("checkpoint_writes")} w USING unnest($3::text[], $4::int[]) AS gone(task_id, idx)
WHERE w.thread_id = $1 AND w.checkpoint_ns = '' AND w.checkpoint_id = $2 AND w.task_id = gone.task_id AND w.idx = gone.idx`,
            [threadId, base, added.map((write) => write.task_id), added.map((write) => write.idx)],
          );
        }
      }
      await this.tidy(client, threadId, target.releasedKeys);
    });
  }

  async prune(target: PruneTarget): Promise<void> {
    const table = (name: string) => `"${this.schema}".${name}`;
    await inTransaction(this.pool, async (client) => {
      await client.query(`DELETE FROM ${table("checkpoints")} WHERE thread_id = $1 AND checkpoint_id < $2`, [target.threadId, target.keepFrom]);
      await client.query(`DELETE FROM ${table("checkpoint_writes")} WHERE thread_id = $1 AND checkpoint_id < $2`, [target.threadId, target.keepFrom]);
      await this.tidy(client, target.threadId, target.releasedKeys);
    });
  }

  /** After checkpoints went: the channel blobs no checkpoint names any more, and the released message rows. */
  private async tidy(client: pg.PoolClient, threadId: string, releasedKeys: readonly number[]): Promise<void> {
    const table = (name: string) => `"${this.schema}".${name}`;
    // A channel value is stored once per version and named by the checkpoints that hold it.
    await client.query(
      `DELETE FROM ${table("checkpoint_blobs")} b WHERE b.thread_id = $1 AND NOT EXISTS (
  SELECT 1 FROM ${table("checkpoints")} c
  WHERE c.thread_id = b.thread_id AND c.checkpoint_ns = b.checkpoint_ns AND c.checkpoint -> 'channel_versions' ->> b.channel = b.version)`,
      [threadId],
    );
    if (releasedKeys.length) {
      await client.query(`UPDATE ${table(MESSAGE_TABLE)} SET message = $3 WHERE thread_id = $1 AND message_key = ANY($2::int[])`, [threadId, [...releasedKeys], RELEASED_MESSAGE]);
    }
  }
}

/**
 * Any saver, through its public interface (the memory backend's MemorySaver): the checkpoints and
 * writes that stay are read, the thread deleted, and they are put back oldest first. Not atomic, so
 * only for a store that lives and dies with the process.
 */
export class RebuildingThreadRewinder implements ThreadRewinder {
  constructor(
    private readonly saver: BaseCheckpointSaver,
    private readonly rows: MemoryMessageRows,
  ) {}

  async rewind(target: RewindTarget): Promise<void> {
    const { base } = target;
    await this.rebuild(target.threadId, (id) => base !== null && id <= base, base, target.keepWrites);
    this.rows.release(target.threadId, target.releasedKeys);
  }

  async prune(target: PruneTarget): Promise<void> {
    await this.rebuild(target.threadId, (id) => id >= target.keepFrom, null, []);
    this.rows.release(target.threadId, target.releasedKeys);
  }

  /** Put back the checkpoints `keeps` keeps (and their writes; on `base`, only those of `keepWrites`). */
  private async rebuild(threadId: string, keeps: (id: string) => boolean, base: string | null, keepWrites: RewindTarget["keepWrites"]): Promise<void> {
    const kept: CheckpointTuple[] = [];
    for await (const tuple of this.saver.list({ configurable: { thread_id: threadId } })) {
      if (keeps(tuple.checkpoint.id)) kept.push(tuple);
    }
    kept.sort((a, b) => (a.checkpoint.id < b.checkpoint.id ? -1 : a.checkpoint.id > b.checkpoint.id ? 1 : 0));
    await this.saver.deleteThread(threadId);
    for (const tuple of kept) {
      const namespace = (tuple.config.configurable?.checkpoint_ns as string | undefined) ?? "";
      const parent = tuple.parentConfig?.configurable?.checkpoint_id as string | undefined;
      const saved = await this.saver.put(
        { configurable: { thread_id: threadId, checkpoint_ns: namespace, ...(parent ? { checkpoint_id: parent } : {}) } },
        tuple.checkpoint,
        tuple.metadata!,
        // Every channel's value is put back: a saver that stores only the channels a put names as
        // changed (the memory backend's) would otherwise keep none of them.
        tuple.checkpoint.channel_versions,
      );
      let writes = tuple.pendingWrites ?? [];
      if (namespace === "" && tuple.checkpoint.id === base) {
        const indexed = writes.map(([task_id, channel], idx) => ({ task_id, channel, idx }));
        const added = new Set(addedWrites(indexed, keepWrites).map((write) => write.idx));
        writes = writes.filter((_, idx) => !added.has(idx));
      }
      const byTask = new Map<string, PendingWrite[]>();
      for (const [task, channel, value] of writes) {
        const list = byTask.get(task) ?? [];
        list.push([channel, value]);
        byTask.set(task, list);
      }
      for (const [task, list] of byTask) await this.saver.putWrites(saved, list, task);
    }
  }
}
