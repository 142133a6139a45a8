import type pg from "pg";

/** Run `fn` on one pooled connection inside BEGIN … COMMIT; any error rolls back and rethrows. */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

/**
 * Run schema setup in one transaction holding a transaction-scoped advisory lock on `name`, so
 * workers and hosts that start together do not race on CREATE SCHEMA / CREATE TABLE.
 */
export function withSetupLock(pool: pg.Pool, name: string, setup: (client: pg.PoolClient) => Promise<void>): Promise<void> {
  return inTransaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [name]);
    await setup(client);
  });
}
