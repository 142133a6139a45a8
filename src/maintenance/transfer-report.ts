/**
 * The JSON reports of `export` and `import`. Like the other reports (report.ts) they name threads
 * and count what was (dry run: would be) copied; they never hold checkpoint content, connection
 * strings or credentials.
 */

/** A conversation's owner as the conversation list (agenthost_threads) or the manifest names it. */
export interface OwnerEntry {
  readonly user_id: string;
  readonly agent_id: string;
  /** The public thread id the owner uses. */
  readonly thread_id: string;
}

/** What one conversation holds, counted as it is copied. */
export interface ThreadCounts {
  /** Checkpoints in every namespace (subgraphs included). */
  readonly checkpoints: number;
  /** Pending writes of those checkpoints (a paused run's interrupts among them). */
  readonly writes: number;
  /** Distinct checkpoint namespaces: 1 for a graph without subgraphs. */
  readonly namespaces: number;
  /** Messages of its latest root checkpoint. */
  readonly messages: number;
}

/** The standard side, by what names it: the file, or the schema (never a connection string). */
export type StandardDescription = { readonly filedb_path: string } | { readonly schema: string };

export interface TransferTotals {
  readonly threads: number;
  readonly checkpoints: number;
  readonly writes: number;
  readonly messages: number;
}

interface TransferReportBase {
  readonly backend: "filedb" | "serverdb";
  /** The service's database: the file path (filedb) or the schema (serverdb). */
  readonly filedb_path?: string;
  readonly schema?: string;
  /** false for a dry run: nothing was written. */
  readonly applied: boolean;
  readonly totals: TransferTotals;
}

export interface ExportReport extends TransferReportBase {
  readonly operation: "export";
  readonly to: StandardDescription;
  /**
   * Tables the export reads that the service's database does not have (older schemas): without
   * the conversation list no owner is known; without the message table no message is stored apart.
   */
  readonly missing_tables: string[];
  /** The file the owners were written to, in the --manifest format (only with --owners). */
  readonly owners_file?: string;
  readonly threads: Array<ThreadCounts & { readonly thread_id: string; readonly owner: OwnerEntry | null }>;
}

export interface ImportReport extends TransferReportBase {
  readonly operation: "import";
  readonly from: StandardDescription;
  readonly existing: "refuse" | "skip";
  readonly threads: Array<
    ThreadCounts & {
      readonly from_thread_id: string;
      /** The storage key it is stored under in agenthost. */
      readonly to_thread_id: string;
      /** null: a lat:v1 key kept as it is, with no manifest entry; it is not in the conversation list. */
      readonly owner: OwnerEntry | null;
    }
  >;
  /** Threads left out because their destination already had checkpoints (--existing skip). */
  readonly skipped: Array<{ readonly from_thread_id: string; readonly to_thread_id: string }>;
}

/** Sum the per-thread counts. */
export function totalsOf(threads: readonly ThreadCounts[]): TransferTotals {
  return {
    threads: threads.length,
    checkpoints: threads.reduce((n, t) => n + t.checkpoints, 0),
    writes: threads.reduce((n, t) => n + t.writes, 0),
    messages: threads.reduce((n, t) => n + t.messages, 0),
  };
}
