import type pg from "pg";
import { createServerPool } from "../checkpoints/server-pool.ts";
import { MaintenanceRefusal } from "./refusal.ts";

/** How long one statement may take: a whole conversation's checkpoints are read in one. */
const STATEMENT_TIMEOUT_MS = 300_000;

/**
 * The connection string in the environment variable `envName` (the one --serverdb-env, or a
 * transfer's --to-serverdb-env / --from-serverdb-env, names); refused when it is unset or empty.
 */
export function databaseUrl(envName: string, readVariable: (name: string) => string | undefined): string {
  const url = readVariable(envName);
  if (url === undefined || url.trim() === "") {
    throw new MaintenanceRefusal(`${envName} is not set; it must hold the server database connection string (--serverdb-env names the variable)`);
  }
  return url;
}

/**
 * A small pool for a library saver (which takes a pool), bounded in time like the service's own,
 * and known to answer: a database that cannot be reached is refused here, before anything is read.
 */
export async function connectPool(url: string): Promise<pg.Pool> {
  const pool = createServerPool({
    connectionString: url,
    max: 4,
    connectTimeoutMs: 5_000,
    queryTimeoutMs: STATEMENT_TIMEOUT_MS,
    onConnectionError: () => undefined,
  });
  try {
    await pool.query("SELECT 1");
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw new MaintenanceRefusal(`cannot connect to the server database: ${(error as Error).message}`);
  }
  return pool;
}
