import { MaintenanceRefusal } from "./refusal.ts";
import type { CheckpointStore } from "./store.ts";

/** The checkpoint tables this database has; required ones missing refuse the whole operation. */
export interface PresentTables {
  readonly present: string[];
  readonly missingOptional: string[];
}

/**
 * Run one maintenance operation in a single transaction: a dry run reads a consistent snapshot and
 * rolls back; an apply locks the tables first, re-validates, changes, and commits only when every
 * step succeeded. Any error rolls everything back and becomes a one-line refusal.
 */
export async function inMaintenanceTransaction<T>(
  store: CheckpointStore,
  apply: boolean,
  fn: (tables: PresentTables) => Promise<T>,
): Promise<T> {
  try {
    return await store.transaction(apply ? "write" : "read", async () => {
      const tables = await checkTables(store);
      if (apply) await store.lockForWrite(tables.present);
      return fn(tables);
    });
  } catch (error) {
    if (error instanceof MaintenanceRefusal) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    throw new MaintenanceRefusal(
      apply
        ? `apply failed and was rolled back, nothing changed: ${reason}`
        : `dry run failed, nothing changed: ${reason}`,
    );
  }
}

/** The checkpoint tables this database has; refused (as a MaintenanceRefusal) when a required one is missing. */
export async function checkTables(store: CheckpointStore): Promise<PresentTables> {
  const { required, optional } = store.layout;
  const found = await store.existingTables([...required, ...optional]);
  const missing = required.filter((t) => !found.has(t));
  if (missing.length > 0) {
    const where = store.backend === "filedb" ? "the file database" : `schema ${JSON.stringify(store.describe.schema)}`;
    throw new MaintenanceRefusal(
      `refused, nothing changed: ${where} has no ${missing.join(", ")} table${missing.length > 1 ? "s" : ""} ` +
        `(is this the service's checkpoint database?)`,
    );
  }
  return {
    present: [...required, ...optional.filter((t) => found.has(t))],
    missingOptional: optional.filter((t) => !found.has(t)),
  };
}
