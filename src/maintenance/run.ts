import type { MaintenanceOptions } from "./args.ts";
import { exportConversations } from "./export.ts";
import { openFiledbStore } from "./filedb-store.ts";
import { importConversations } from "./import.ts";
import { loadManifest } from "./manifest.ts";
import { migrate } from "./migrate.ts";
import type { MaintenanceReport } from "./report.ts";
import { retain } from "./retention.ts";
import { databaseUrl } from "./server-connection.ts";
import { openServerdbStore } from "./serverdb-store.ts";
import type { CheckpointStore } from "./store.ts";

export interface RunContext {
  /** The value of the variable `--serverdb-env` names; the CLI passes a lookup in its environment. */
  readonly readVariable: (name: string) => string | undefined;
  /** How long to wait for a worker that still holds a lock before refusing (tests shorten it). */
  readonly lockTimeoutMs?: number;
}

/**
 * Carry out one maintenance run: validate the manifest before touching the database, open it,
 * run the migration, the retention, the export or the import (dry run unless `apply`), close it,
 * return the report. Export and import only read the service's database through this store (an
 * import writes through the service's own saver stack: import.ts).
 */
export async function runMaintenance(options: MaintenanceOptions, context: RunContext): Promise<MaintenanceReport> {
  const { operation, target, apply } = options;
  // The manifest is validated before the database is opened.
  const manifestPath = operation.kind === "migrate" || operation.kind === "import" ? operation.manifestPath : undefined;
  const mappings = manifestPath !== undefined ? await loadManifest(manifestPath) : [];
  const writesHere = apply && (operation.kind === "migrate" || operation.kind === "retention");

  let store: CheckpointStore;
  if (target.backend === "filedb") {
    store = openFiledbStore(target.path, { readonly: !writesHere, busyTimeoutMs: context.lockTimeoutMs });
  } else {
    store = await openServerdbStore(databaseUrl(target.envName, context.readVariable), target.schema, context.lockTimeoutMs);
  }
  try {
    switch (operation.kind) {
      case "migrate":
        return await migrate(store, mappings, apply);
      case "retention":
        return await retain(store, operation.before, operation.cutoff, apply);
      case "export":
        return await exportConversations(store, target, operation, apply, context);
      case "import":
        return await importConversations(store, target, operation, mappings, apply, context);
    }
  } finally {
    await store.close();
  }
}
