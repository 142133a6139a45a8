// bin/maintenance export and import on the machine's PostgreSQL, one schema per database: the shared
// suite, and exports across backends: PostgreSQL into a SQLite file, a SQLite file into a schema.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import Database from "../../src/checkpoints/sqlite-driver.ts";
import pg from "pg";
import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { storageKey } from "../../src/auth/storage-key.ts";
import { ownerConfigurable } from "../../src/contract/conversation-owner-key.ts";
import { parseArgs } from "../../src/maintenance/args.ts";
import { runMaintenance } from "../../src/maintenance/run.ts";
import type { ExportReport } from "../../src/maintenance/transfer-report.ts";
import { DATABASE_URL, dropSchema, uniqueSchema } from "../helpers/postgres.ts";
import { AGENT, filedbTransfer, historyOf, interruptedConversation, reviewGraph, serverdbTransfer, snapshotOf } from "../fixtures/maintenance/transfer.ts";
import { defineTransferSuite } from "../fixtures/maintenance/transfer-suite.ts";

defineTransferSuite("serverdb", serverdbTransfer);

test("export (serverdb): a PostgreSQL conversation into a SQLite file that LangGraph's SqliteSaver reads the same", async () => {
  const db = await serverdbTransfer();
  try {
    const key = storageKey("gina", AGENT, "cross");
    const service = await db.openService();
    let expected;
    try {
      const graph = await interruptedConversation(service.saver, { thread_id: key, ...ownerConfigurable("gina", AGENT, "cross") });
      expected = { state: await snapshotOf(graph, key), history: await historyOf(graph, key) };
    } finally {
      await service.close();
    }
    const to = join(db.dir, "from-postgres.sqlite");
    const report = (await db.run(["export", "--to", to, "--thread", key, "--apply=true"])) as ExportReport;
    assert.deepEqual(report.to, { filedb_path: to });
    assert.equal(report.threads.length, 1);
    const file = new Database(to, { readonly: true });
    try {
      const graph = reviewGraph(new SqliteSaver(file, new JsonPlusSerializer()));
      assert.deepEqual(await snapshotOf(graph, key), expected.state);
      assert.deepEqual(await historyOf(graph, key), expected.history);
    } finally {
      file.close();
    }
  } finally {
    await db.dispose();
  }
});

test("export (filedb): a SQLite conversation into a new PostgreSQL schema that LangGraph's PostgresSaver reads the same", async () => {
  const file = await filedbTransfer();
  const schema = uniqueSchema("t_from_file");
  try {
    const key = storageKey("hana", AGENT, "cross");
    const service = await file.openService();
    let expected;
    try {
      const graph = await interruptedConversation(service.saver, { thread_id: key, ...ownerConfigurable("hana", AGENT, "cross") });
      expected = { state: await snapshotOf(graph, key), history: await historyOf(graph, key) };
    } finally {
      await service.close();
    }
    const args = parseArgs(["export", ...file.flags, "--to-schema", schema, "--to-serverdb-env", "EXPORT_DB", "--apply=true"]);
    assert.ok(!args.help);
    const report = (await runMaintenance(args, { readVariable: (name) => (name === "EXPORT_DB" ? DATABASE_URL : undefined) })) as ExportReport;
    assert.deepEqual(report.to, { schema });
    const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 2 });
    try {
      const graph = reviewGraph(new PostgresSaver(pool, new JsonPlusSerializer(), { schema }));
      assert.deepEqual(await snapshotOf(graph, key), expected.state);
      assert.deepEqual(await historyOf(graph, key), expected.history);
    } finally {
      await pool.end();
    }
  } finally {
    await dropSchema(schema);
    await file.dispose();
  }
});
