import { randomBytes } from "node:crypto";
import pg from "pg";

export const DATABASE_URL = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** A schema name unique to this test run. */
export function uniqueSchema(prefix = "t"): string {
  return `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`;
}

export async function withClient<T>(fn: (client: pg.Client) => Promise<T>, url = DATABASE_URL): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export function dropSchema(schema: string): Promise<void> {
  return withClient(async (client) => {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  });
}
