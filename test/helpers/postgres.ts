import { randomBytes } from "node:crypto";
import pg from "pg";

/** The PostgreSQL database every test uses: TEST_DATABASE_URL, else the local one (DEVELOPERS.md, "Local services"). */
export const DATABASE_URL = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
/** Its port, for tests that put a proxy in front of it. */
export const DATABASE_PORT = Number(new URL(DATABASE_URL).port || 5432);
/** Its host, for the same. */
export const DATABASE_HOST = new URL(DATABASE_URL).hostname;

/** DATABASE_URL reached through another port on 127.0.0.1 (a TcpProxy in front of it). */
export function databaseUrlThrough(port: number): string {
  const url = new URL(DATABASE_URL);
  url.hostname = "127.0.0.1";
  url.port = String(port);
  return url.href;
}

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
