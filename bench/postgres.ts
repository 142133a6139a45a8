import pg from "pg";

/** One statement on its own connection (the benches' schema setup and clean-up); its rows. */
export async function pgQuery(url: string, sql: string): Promise<Array<Record<string, unknown>>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows as Array<Record<string, unknown>>;
  } finally {
    await client.end();
  }
}
