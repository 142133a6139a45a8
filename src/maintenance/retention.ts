import { STORAGE_KEY_PATTERN } from "../auth/storage-key.ts";
import { MaintenanceRefusal } from "./refusal.ts";
import type { RetentionReport, RowCounts } from "./report.ts";
import type { CheckpointStore } from "./store.ts";
import { parseInstant } from "./timestamp.ts";
import { inMaintenanceTransaction } from "./transaction.ts";

const SHOWN_PROBLEMS = 5;

/**
 * Delete whole canonical threads whose newest checkpoint, across all namespaces, is older than the
 * cutoff: every checkpoint, blob and pending write of the thread, in one transaction. Legacy raw
 * thread ids are never eligible. A checkpoint of a canonical thread with a missing or unparsable
 * timestamp stops the operation before anything is deleted. Threads are deleted whole or not at
 * all; checkpoints inside a thread are never compacted.
 */
export async function retain(
  store: CheckpointStore,
  before: string,
  cutoff: bigint,
  apply: boolean,
): Promise<RetentionReport> {
  return inMaintenanceTransaction(store, apply, async ({ present, missingOptional }) => {
    const ids = await store.threadIds(store.layout.checkpoints);
    const canonical = ids.filter((id) => STORAGE_KEY_PATTERN.test(id));

    const latest = new Map<string, { at: bigint; text: string }>();
    const problems: string[] = [];
    for (const row of await store.canonicalCheckpointTimes()) {
      if (!STORAGE_KEY_PATTERN.test(row.threadId)) continue;
      const at = typeof row.ts === "string" ? parseInstant(row.ts) : undefined;
      if (at === undefined) {
        const what = row.ts === null || row.ts === undefined ? "no timestamp" : "an invalid timestamp";
        problems.push(
          `checkpoint ${row.checkpointId} (namespace ${JSON.stringify(row.checkpointNs)}) of thread ${row.threadId} has ${what}`,
        );
        continue;
      }
      const seen = latest.get(row.threadId);
      if (!seen || at > seen.at) latest.set(row.threadId, { at, text: row.ts as string });
    }
    if (problems.length > 0) {
      const more = problems.length > SHOWN_PROBLEMS ? `; and ${problems.length - SHOWN_PROBLEMS} more` : "";
      throw new MaintenanceRefusal(
        `refused, nothing deleted: ${problems.length} checkpoint timestamp${problems.length > 1 ? "s are" : " is"} ` +
          `missing or invalid: ${problems.slice(0, SHOWN_PROBLEMS).join("; ")}${more}`,
      );
    }

    const eligible = canonical.filter((id) => (latest.get(id)?.at ?? cutoff) < cutoff).sort();
    const perThread = new Map<string, RowCounts>(eligible.map((id) => [id, {}]));
    const totals: RowCounts = {};
    for (const table of present) {
      const counts = await store.countRows(table, eligible);
      totals[table] = 0;
      for (const id of eligible) {
        const n = counts.get(id) ?? 0;
        (perThread.get(id) as RowCounts)[table] = n;
        totals[table] += n;
      }
    }

    if (apply && eligible.length > 0) {
      for (const table of present) {
        const deleted = await store.deleteThreads(table, eligible);
        if (deleted !== totals[table]) {
          throw new Error(`${table} changed during the run (${totals[table]} rows planned, ${deleted} deleted)`);
        }
      }
    }
    return {
      operation: "retention",
      backend: store.backend,
      ...store.describe,
      applied: apply,
      before,
      rows: totals,
      missing_tables: missingOptional,
      canonical_threads: canonical.length,
      legacy_threads: ids.length - canonical.length,
      eligible_threads: eligible.map((id) => ({
        thread_id: id,
        latest_checkpoint_ts: latest.get(id)?.text ?? "",
        rows: perThread.get(id) ?? {},
      })),
    };
  });
}
