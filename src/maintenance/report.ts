import type { ExportReport, ImportReport } from "./transfer-report.ts";

/**
 * The JSON report on stdout. It names threads and counts rows; it never holds checkpoint content,
 * connection strings or credentials.
 */

/** Rows per checkpoint table, e.g. `{ "checkpoints": 7, "writes": 12 }`. */
export type RowCounts = Record<string, number>;

interface ReportBase {
  readonly backend: "filedb" | "serverdb";
  /** The file path (filedb) or the schema (serverdb). */
  readonly filedb_path?: string;
  readonly schema?: string;
  /** false for a dry run: nothing was changed. */
  readonly applied: boolean;
  /** Rows moved or deleted (dry run: that would be), per table, summed over all threads. */
  readonly rows: RowCounts;
  /** Optional write tables this database does not have (older schemas); nothing to do there. */
  readonly missing_tables: string[];
}

export interface MigrationReport extends ReportBase {
  readonly operation: "migrate";
  readonly mappings: Array<{
    readonly old_thread_id: string;
    readonly user_id: string;
    readonly agent_id: string;
    readonly thread_id: string;
    readonly new_thread_id: string;
    readonly rows: RowCounts;
  }>;
}

export interface RetentionReport extends ReportBase {
  readonly operation: "retention";
  /** The cutoff as given on the command line. */
  readonly before: string;
  /** Distinct canonical (lat:v1:) threads examined. */
  readonly canonical_threads: number;
  /** Distinct legacy raw thread ids, never eligible and never touched. */
  readonly legacy_threads: number;
  readonly eligible_threads: Array<{
    readonly thread_id: string;
    /** The newest checkpoint timestamp of the thread across all namespaces, as stored. */
    readonly latest_checkpoint_ts: string;
    readonly rows: RowCounts;
  }>;
}

export type MaintenanceReport = MigrationReport | RetentionReport | ExportReport | ImportReport;

/** Add per-thread counts into a per-table total, keeping every table present (zero included). */
export function sumRows(tables: readonly string[], perThread: Iterable<RowCounts>): RowCounts {
  const total: RowCounts = Object.fromEntries(tables.map((t) => [t, 0]));
  for (const counts of perThread) {
    for (const [table, n] of Object.entries(counts)) total[table] = (total[table] ?? 0) + n;
  }
  return total;
}
