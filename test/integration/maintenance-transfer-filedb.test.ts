// bin/maintenance export and import on real SQLite files: the shared suite, the command line, a
// source file in another journal mode, and the whole way round through the real HTTP service.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import Database from "../../src/checkpoints/sqlite-driver.ts";
import type { BaseMessage } from "@langchain/core/messages";
import { MessagesAnnotation, StateGraph } from "@langchain/langgraph";
import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { storageKey } from "../../src/auth/storage-key.ts";
import type { ExportReport, ImportReport } from "../../src/maintenance/transfer-report.ts";
import { call, startService, type RunningService } from "../helpers/service.ts";
import { AGENT, filedbTransfer, interruptedConversation, messageView, snapshotOf, reviewGraph } from "../fixtures/maintenance/transfer.ts";
import { defineTransferSuite, refusal } from "../fixtures/maintenance/transfer-suite.ts";

defineTransferSuite("filedb", filedbTransfer);

const BIN = fileURLToPath(new URL("../../bin/maintenance", import.meta.url));

interface Exit {
  code: number;
  stdout: string;
  stderr: string;
}

function maintenance(args: readonly string[]): Promise<Exit> {
  return new Promise((resolve) => {
    execFile(BIN, args, { env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", AGENTHOST_DOTENV: "off" } }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

function assertRefused(exit: Exit, code: number, reason: RegExp): void {
  assert.equal(exit.code, code, exit.stderr);
  assert.equal(exit.stdout, "");
  assert.equal(exit.stderr.trimEnd().split("\n").length, 1, `more than one line: ${exit.stderr}`);
  assert.match(exit.stderr, reason);
}

test("bin/maintenance export and import: --help explains them; the JSON report, exit status and one-line refusals as for the other commands", async () => {
  const db = await filedbTransfer();
  try {
    await (await db.openService()).close();
    const to = join(db.dir, "export.sqlite");
    const taken = join(db.dir, "taken.sqlite");
    writeFileSync(taken, "not yours");
    const [help, dry, exists, noTarget, wrongFlag, noSource, badExisting] = await Promise.all([
      maintenance(["export", "--help"]),
      maintenance(["export", ...db.flags, "--to", to]),
      maintenance(["export", ...db.flags, "--to", taken, "--apply=true"]),
      maintenance(["export", ...db.flags]),
      maintenance(["import", ...db.flags, "--from", to, "--before", "2020-01-01T00:00:00Z"]),
      maintenance(["import", ...db.flags, "--from", join(db.dir, "missing.sqlite")]),
      maintenance(["import", ...db.flags, "--from", to, "--existing", "overwrite"]),
    ]);
    assert.equal(help.code, 0);
    for (const flag of ["export", "import", "--to", "--to-schema", "--to-serverdb-env", "--owners", "--from", "--from-schema", "--existing", "--thread", "--user"]) {
      assert.ok(help.stdout.includes(flag), `--help does not mention ${flag}`);
    }
    assert.match(help.stdout, /while every service\s+worker and background writer is stopped/);
    assert.equal(dry.code, 0, dry.stderr);
    assert.equal(dry.stderr, "");
    const report = JSON.parse(dry.stdout) as ExportReport;
    assert.deepEqual([report.operation, report.applied, report.to, report.threads], ["export", false, { filedb_path: to }, []]);
    assertRefused(exists, 1, /^maintenance: ".*taken\.sqlite" already exists; the export writes a new file\n?$/);
    assert.equal(readFileSync(taken, "utf8"), "not yours");
    assertRefused(noTarget, 2, /give one of --to PATH \(a new SQLite file\) or --to-schema NAME/);
    assertRefused(wrongFlag, 2, /unknown flag --before/);
    assertRefused(noSource, 1, /^maintenance: file ".*missing\.sqlite" does not exist\n?$/);
    assertRefused(badExisting, 2, /--existing must be refuse or skip/);
    const misplaced = await maintenance([...db.flags, "export", "--to", to]);
    assertRefused(misplaced, 2, /the command export must come first/);
  } finally {
    await db.dispose();
  }
});

test("import reads a source file in another journal mode from a copy, and leaves the file as it was", async () => {
  const db = await filedbTransfer();
  try {
    await (await db.openService()).close();
    const from = db.newStandardName();
    const key = storageKey("frank", AGENT, "journal");
    const file = new Database(from);
    let expected;
    try {
      const graph = await interruptedConversation(new SqliteSaver(file, new JsonPlusSerializer()), { thread_id: key });
      expected = await snapshotOf(graph, key);
      file.pragma("journal_mode = DELETE");
    } finally {
      file.close();
    }
    const bytes = readFileSync(from);
    const report = (await db.run(["import", "--from", from, "--apply=true"])) as ImportReport;
    assert.equal(report.totals.threads, 1);
    assert.ok(readFileSync(from).equals(bytes), "the source file is unchanged");
    const service = await db.openService();
    try {
      assert.deepEqual(await snapshotOf(reviewGraph(service.saver), key), expected);
    } finally {
      await service.close();
    }
  } finally {
    await db.dispose();
  }
});

async function invoke(service: RunningService, userId: string, threadId: string, message: string): Promise<void> {
  const res = await call(service, "POST", `/${AGENT}/invoke`, { input: { message }, thread_id: threadId, user_id: userId });
  assert.equal(res.status, 200, await res.text());
}

async function history(service: RunningService, userId: string, threadId: string): Promise<Array<[string, unknown]>> {
  const res = await call(service, "GET", `/${AGENT}/history?thread_id=${threadId}&user_id=${userId}`);
  assert.equal(res.status, 200, await res.clone().text());
  return ((await res.json()) as { messages: Array<{ type: string; content: unknown }> }).messages.map((m) => [m.type, m.content]);
}

test("the whole way round: the HTTP service's conversations, exported, read by LangGraph's saver, imported into a new database and continued there", async () => {
  const db = await filedbTransfer();
  const fresh = await filedbTransfer();
  try {
    let service = await startService(db.env);
    let said: Array<[string, unknown]>;
    let ids: unknown[];
    try {
      await invoke(service, "alice", "conv-1", "hello");
      await invoke(service, "alice", "conv-1", "second turn");
      await invoke(service, "bob", "conv-1", "bob's own");
      said = await history(service, "alice", "conv-1");
      const state = await service.runtime.registry.get(AGENT)!.graph.getState({ configurable: { thread_id: storageKey("alice", AGENT, "conv-1") } });
      ids = messageView((state.values as { messages: BaseMessage[] }).messages).map((m) => m.id);
    } finally {
      await service.close();
    }
    assert.equal(said.length, 4);

    const exported = join(db.dir, "langgraph.sqlite");
    const owners = join(db.dir, "owners.json");
    const report = (await db.run(["export", "--to", exported, "--owners", owners, "--user", "alice", "--apply=true"])) as ExportReport;
    assert.deepEqual(report.threads.map((t) => [t.thread_id, t.owner, t.messages]), [
      [storageKey("alice", AGENT, "conv-1"), { user_id: "alice", agent_id: AGENT, thread_id: "conv-1" }, 4],
    ]);

    // LangGraph's own saver, a new instance with the library's serializer, under a graph of the same shape.
    const file = new Database(exported, { readonly: true });
    try {
      const graph = new StateGraph(MessagesAnnotation)
        .addNode("chatbot", () => ({}))
        .addEdge("__start__", "chatbot")
        .addEdge("chatbot", "__end__")
        .compile({ checkpointer: new SqliteSaver(file, new JsonPlusSerializer()) });
      const state = await graph.getState({ configurable: { thread_id: storageKey("alice", AGENT, "conv-1") } });
      const messages = messageView((state.values as { messages: BaseMessage[] }).messages);
      assert.deepEqual(messages.map((m) => [m.type, m.content]), said);
      assert.deepEqual(messages.map((m) => m.id), ids);
      assert.equal((await graph.getState({ configurable: { thread_id: storageKey("bob", AGENT, "conv-1") } })).values.messages, undefined, "--user alice exports only alice's");
    } finally {
      file.close();
    }

    await (await fresh.openService()).close();
    const imported = (await fresh.run(["import", "--from", exported, "--manifest", owners, "--apply=true"])) as ImportReport;
    assert.equal(imported.totals.threads, 1);
    service = await startService(fresh.env);
    try {
      assert.deepEqual(await history(service, "alice", "conv-1"), said);
      const listed = (await (await call(service, "GET", `/${AGENT}/threads?user_id=alice`)).json()) as { threads: Array<{ thread_id: string; title: string; message_count: number }> };
      assert.deepEqual(listed.threads.map((t) => [t.thread_id, t.title, t.message_count]), [["conv-1", "hello", 4]]);
      await invoke(service, "alice", "conv-1", "third turn");
      const continued = await history(service, "alice", "conv-1");
      assert.deepEqual(continued.slice(0, 4), said);
      assert.deepEqual(continued[4], ["human", "third turn"]);
      assert.equal(continued.length, 6);
    } finally {
      await service.close();
    }
  } finally {
    await db.dispose();
    await fresh.dispose();
  }
});

test("an import that fails part-way deletes again, through the same saver, the conversations it had written", async () => {
  const db = await filedbTransfer();
  try {
    await (await db.openService()).close();
    const from = db.newStandardName();
    const file = new Database(from);
    try {
      const saver = new SqliteSaver(file, new JsonPlusSerializer());
      await interruptedConversation(saver, { thread_id: "a-first" });
      await interruptedConversation(saver, { thread_id: "b-second" });
    } finally {
      file.close();
    }
    const manifest = join(db.dir, "manifest.json");
    writeFileSync(
      manifest,
      JSON.stringify([
        { old_thread_id: "a-first", user_id: "alice", agent_id: AGENT, thread_id: "one" },
        { old_thread_id: "b-second", user_id: "alice", agent_id: AGENT, thread_id: "two" },
      ]),
    );
    const second = storageKey("alice", AGENT, "two");
    await db.query(`CREATE TRIGGER refuse_second BEFORE INSERT ON checkpoints WHEN NEW.thread_id = '${second}' BEGIN SELECT RAISE(ABORT, 'injected failure'); END`);
    await assert.rejects(
      db.run(["import", "--from", from, "--manifest", manifest, "--apply=true"]),
      refusal(1, /^import failed, the 2 conversations it had written deleted again: injected failure$/),
    );
    for (const table of ["checkpoints", "writes", "agenthost_threads"]) {
      assert.deepEqual(await db.query(`SELECT count(*) AS n FROM ${table}`), [{ n: 0 }], table);
    }
    // The message store keeps a cleared conversation's highest key taken, its row emptied.
    assert.deepEqual(await db.query("SELECT DISTINCT message FROM agenthost_messages"), [{ message: "" }]);
  } finally {
    await db.dispose();
  }
});
