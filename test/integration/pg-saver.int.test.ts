import { after, test } from "node:test";
import assert from "node:assert/strict";
import { JsonPlusSerializer, type BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import pg from "pg";
import { BatchedPostgresSaver } from "../../src/checkpoints/pg-saver.ts";
import { DATABASE_URL, dropSchema, uniqueSchema } from "../helpers/postgres.ts";
import { converseWithInterrupt } from "../helpers/saver-conversation.ts";

const pools: pg.Pool[] = [];
const schemas: string[] = [];
after(async () => {
  await Promise.all(pools.map((pool) => pool.end()));
  await Promise.all(schemas.map(dropSchema));
});

/** A pool whose statements are counted. */
function countedPool(): { pool: pg.Pool; statements: () => number } {
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 4 });
  pools.push(pool);
  let count = 0;
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args) => {
    count++;
    return query(...args);
  };
  pool.on("connect", (client) => {
    const clientQuery = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args) => {
      count++;
      return clientQuery(...args);
    };
  });
  return { pool, statements: () => count };
}

/** The shared conversation on `saver`: how many statements it took, and the history read back. */
async function converse(saver: BaseCheckpointSaver, statements: () => number) {
  const before = statements();
  const conversation = await converseWithInterrupt(saver);
  const used = statements() - before;
  return { used, history: await conversation.history() };
}

async function tableShape(schema: string) {
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  try {
    const blobs = await client.query(`SELECT channel, type, encode(blob, 'hex') AS blob FROM "${schema}".checkpoint_blobs ORDER BY channel, version`);
    const writes = await client.query(`SELECT channel, type, idx, encode(blob, 'hex') AS blob FROM "${schema}".checkpoint_writes ORDER BY checkpoint_id, task_id, idx`);
    const checkpoints = await client.query(`SELECT metadata FROM "${schema}".checkpoints ORDER BY checkpoint_id`);
    return { blobs: blobs.rows, writes: writes.rows.length, checkpoints: checkpoints.rows.map((r: { metadata: { step: number; source: string } }) => [r.metadata.step, r.metadata.source]) };
  } finally {
    await client.end();
  }
}

test("the batched saver stores what LangGraph's PostgresSaver stores, in one statement per put and per putWrites", async () => {
  const [libraryAt, batchedAt] = [uniqueSchema("pglib"), uniqueSchema("pgbatch")];
  schemas.push(libraryAt, batchedAt);
  const library = countedPool();
  const batched = countedPool();
  const librarySaver = new PostgresSaver(library.pool, new JsonPlusSerializer(), { schema: libraryAt });
  const batchedSaver = new BatchedPostgresSaver(batched.pool, new JsonPlusSerializer(), batchedAt);
  await librarySaver.setup();
  await batchedSaver.setup();

  const fromLibrary = await converse(librarySaver, library.statements);
  const fromBatched = await converse(batchedSaver, batched.statements);
  assert.deepEqual(fromBatched.history, fromLibrary.history, "the same states, history and interrupts read back");
  const [libraryShape, batchedShape] = await Promise.all([tableShape(libraryAt), tableShape(batchedAt)]);
  assert.deepEqual(batchedShape.blobs, libraryShape.blobs, "the same channel blobs");
  assert.equal(batchedShape.writes, libraryShape.writes, "as many pending writes");
  assert.deepEqual(batchedShape.checkpoints, libraryShape.checkpoints, "the same checkpoints");

  // Three runs: each reads its thread once, then writes every step's checkpoint and writes.
  assert.ok(fromBatched.used * 2 <= fromLibrary.used, `at most half the statements: ${fromBatched.used} vs ${fromLibrary.used}`);
});
