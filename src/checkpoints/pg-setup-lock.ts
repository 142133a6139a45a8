import type pg from "pg";

/**
 * Run schema setup in one transaction holding a transaction-scoped advisory lock on `name`, so
 * workers and hosts that start together do not race on CREATE SCHEMA / CREATE TABLE.
 */
export async function withSetupLock(pool: pg.Pool, name: string, setup: (client: pg.PoolClient) => Promise<void>): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [name]);
    await setup(client);
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}
