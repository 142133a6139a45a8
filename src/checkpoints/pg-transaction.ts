import type pg from "pg";

/**
 * Run `fn` on one pooled connection inside BEGIN … COMMIT; any error rolls back, discards the
 * connection and rethrows.
 */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let failure: Error | undefined;
  try {
    await client.query("BEGIN");
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    failure = error instanceof Error ? error : new Error("transaction failed");
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    // After a failure the connection may be dead or mid-statement: discard it rather than pool it.
    client.release(failure);
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
