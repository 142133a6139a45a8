import { manifestConflicts, type Mapping } from "./manifest.ts";
import { MaintenanceRefusal } from "./refusal.ts";
import { sumRows, type MigrationReport, type RowCounts } from "./report.ts";
import type { CheckpointStore } from "./store.ts";
import { parseInstant } from "./timestamp.ts";
import { inMaintenanceTransaction } from "./transaction.ts";

/**
 * The first and last checkpoint times of a migrated conversation, in milliseconds, for its entry in
 * the conversation list; now for both when none of its timestamps parses.
 */
function timeSpan(stamps: readonly unknown[]): [number, number] {
  const times = stamps
    .map((ts) => (typeof ts === "string" ? parseInstant(ts) : undefined))
    .filter((at): at is bigint => at !== undefined)
    .map((at) => Number(at / 1_000_000n));
  if (!times.length) return [Date.now(), Date.now()];
  return [Math.min(...times), Math.max(...times)];
}

/**
 * Move legacy threads to their owners' storage keys. Ownership comes only from the manifest.
 * Refused as a whole when a source has no checkpoints, a source or destination repeats, an id is
 * both a source and a destination, or a destination already has rows in any table. Apply repeats
 * every check inside the transaction that rewrites the thread id in every table and namespace.
 */
export async function migrate(store: CheckpointStore, mappings: readonly Mapping[], apply: boolean): Promise<MigrationReport> {
  const conflicts = manifestConflicts(mappings);
  if (conflicts.length > 0) throw new MaintenanceRefusal(`refused, nothing changed: ${conflicts.join("; ")}`);

  return inMaintenanceTransaction(store, apply, async ({ present, missingOptional }) => {
    const sources = mappings.map((m) => m.oldThreadId);
    const destinations = mappings.map((m) => m.newThreadId);
    const sourceRows = new Map<string, Map<string, number>>();
    const takenRows = mappings.map((): string[] => []);
    for (const table of present) {
      sourceRows.set(table, await store.countRows(table, sources));
      const taken = await store.countRows(table, destinations);
      mappings.forEach((m, i) => {
        const n = taken.get(m.newThreadId);
        if (n) takenRows[i]?.push(`${table}: ${n}`);
      });
    }
    const checkpointRows = sourceRows.get(store.layout.checkpoints) ?? new Map<string, number>();
    const problems = [
      ...mappings.flatMap((m, i) =>
        checkpointRows.get(m.oldThreadId) ? [] : [`source ${JSON.stringify(m.oldThreadId)} of manifest[${i}] has no checkpoints`],
      ),
      ...mappings.flatMap((m, i) =>
        takenRows[i]?.length
          ? [`destination ${m.newThreadId} of manifest[${i}] already has rows (${takenRows[i]?.join(", ")})`]
          : [],
      ),
    ];
    if (problems.length > 0) throw new MaintenanceRefusal(`refused, nothing changed: ${problems.join("; ")}`);

    const planned = mappings.map(
      (m): RowCounts => Object.fromEntries(present.map((t) => [t, sourceRows.get(t)?.get(m.oldThreadId) ?? 0])),
    );
    if (apply) {
      for (const [i, m] of mappings.entries()) {
        for (const table of present) {
          const changed = await store.renameThread(table, m.oldThreadId, m.newThreadId);
          const expected = planned[i]?.[table] ?? 0;
          if (changed !== expected) {
            throw new Error(`${table} rows of ${JSON.stringify(m.oldThreadId)} changed during the run (${expected} planned, ${changed} moved)`);
          }
        }
        const [createdAt, updatedAt] = timeSpan(await store.checkpointTimesOf(m.newThreadId));
        await store.listThread(m.newThreadId, { userId: m.userId, agentId: m.agentId, threadId: m.threadId }, createdAt, updatedAt);
      }
    }
    return {
      operation: "migrate",
      backend: store.backend,
      ...store.describe,
      applied: apply,
      rows: sumRows(present, planned),
      missing_tables: missingOptional,
      mappings: mappings.map((m, i) => ({
        old_thread_id: m.oldThreadId,
        user_id: m.userId,
        agent_id: m.agentId,
        thread_id: m.threadId,
        new_thread_id: m.newThreadId,
        rows: planned[i] ?? {},
      })),
    };
  });
}
