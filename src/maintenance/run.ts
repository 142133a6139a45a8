import type { MaintenanceOptions } from "./args.ts";
import { openFiledbStore } from "./filedb-store.ts";
import { loadManifest } from "./manifest.ts";
import { migrate } from "./migrate.ts";
import { MaintenanceRefusal } from "./refusal.ts";
import type { MaintenanceReport } from "./report.ts";
import { retain } from "./retention.ts";
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
 * run the migration or the retention (dry run unless `apply`), close it, return the report.
 */
export async function runMaintenance(options: MaintenanceOptions, context: RunContext): Promise<MaintenanceReport> {
  const { operation, target, apply } = options;
  // The manifest is validated before the database is opened.
  const mappings = operation.kind === "migrate" ? await loadManifest(operation.manifestPath) : [];

  let store: CheckpointStore;
  if (target.backend === "filedb") {
    store = openFiledbStore(target.path, { readonly: !apply, busyTimeoutMs: context.lockTimeoutMs });
  } else {
    const url = context.readVariable(target.envName);
    if (url === undefined || url.trim() === "") {
      throw new MaintenanceRefusal(
        `${target.envName} is not set; it must hold the server database connection string (--serverdb-env names the variable)`,
      );
    }
    store = await openServerdbStore(url, target.schema, context.lockTimeoutMs);
  }
  try {
    return operation.kind === "migrate"
      ? await migrate(store, mappings, apply)
      : await retain(store, operation.before, operation.cutoff, apply);
  } finally {
    await store.close();
  }
}
