import { after, test } from "node:test";
import assert from "node:assert/strict";
import { JsonPlusSerializer, type BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import pg from "pg";
import { ownerConfigurable } from "../../src/contract/conversation-owner-key.ts";
import { PostgresMessageRows } from "../../src/checkpoints/message-rows.ts";
import { MessageStoreSaver } from "../../src/checkpoints/message-store.ts";
import { BatchedPostgresSaver, postgresSaver, postgresWriter } from "../../src/checkpoints/pg-saver.ts";
import { PostgresThreadIndex } from "../../src/checkpoints/thread-index-sql.ts";
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
async function converse(saver: BaseCheckpointSaver, statements: () => number, configurable?: Record<string, unknown>) {
  const before = statements();
  const conversation = await converseWithInterrupt(saver, configurable);
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

test("postgresSaverWrites off: LangGraph's own PostgresSaver under the message store stores the same checkpoints, message rows and list entry", async () => {
  const stored = async (shortcut: boolean) => {
    const schema = uniqueSchema(shortcut ? "pgshort" : "pgown");
    schemas.push(schema);
    const { pool, statements } = countedPool();
    const saver = postgresSaver(pool, new JsonPlusSerializer(), schema, shortcut);
    assert.equal(saver instanceof BatchedPostgresSaver, shortcut);
    await saver.setup();
    const rows = new PostgresMessageRows(pool, schema);
    await rows.setup();
    const threads = new PostgresThreadIndex(pool, schema);
    await threads.setup();
    const writer = postgresWriter(saver, rows, threads);
    assert.equal((writer as unknown) === saver, shortcut);
    const store = new MessageStoreSaver(saver, rows, 1_000, threads, writer);
    const { used, history } = await converse(store, statements, ownerConfigurable("u", "agent", "public-t"));
    const messages = await pool.query(`SELECT thread_id, message_key, message FROM "${schema}".agenthost_messages ORDER BY message_key`);
    const listed = await pool.query(`SELECT thread_id, user_id, agent_id, public_thread_id, title, message_count FROM "${schema}".agenthost_threads`);
    return { used, stored: { history, shape: await tableShape(schema), messages: messages.rows, listed: listed.rows } };
  };
  const library = await stored(false);
  const service = await stored(true);
  assert.ok(library.stored.messages.length >= 3 && library.stored.listed.length === 1);
  assert.deepEqual(service.stored, library.stored);
  assert.ok(service.used * 2 <= library.used, `at most half the statements: ${service.used} vs ${library.used}`);
});
