// End to end: the real HTTP service writes conversations to a SQLite file, the service stops,
// bin/maintenance moves them to a new owner, the service restarts and continues them for that owner.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { storageKey } from "../../src/auth/storage-key.ts";
import { parseArgs } from "../../src/maintenance/args.ts";
import type { MigrationReport } from "../../src/maintenance/report.ts";
import { runMaintenance } from "../../src/maintenance/run.ts";
import Database from "../../src/checkpoints/sqlite-driver.ts";
import { call, startService, type RunningService } from "../helpers/service.ts";

const AGENT = "chatbot-agent";

async function invoke(service: RunningService, userId: string, threadId: string, message: string): Promise<void> {
  const res = await call(service, "POST", `/${AGENT}/invoke`, { input: { message }, thread_id: threadId, user_id: userId });
  assert.equal(res.status, 200, await res.text());
}

/** The conversation as the running service's own agent graph and saver read it: [type, content]. */
async function storedMessages(service: RunningService, threadKey: string): Promise<Array<[string, unknown]>> {
  const agent = service.runtime.registry.get(AGENT);
  assert.ok(agent);
  const state = await agent.graph.getState({ configurable: { thread_id: threadKey } });
  return ((state.values as { messages?: BaseMessage[] }).messages ?? []).map((m) => [m.getType(), m.content]);
}

/**
 * The conversation as the owner reads it. Through GET /{agent}/history when the service has that
 * route; until then (it answers the generic 404) through the service's saver under the storage key
 * the service itself would compute for this owner.
 */
async function ownersView(service: RunningService, userId: string, threadId: string): Promise<Array<[string, unknown]>> {
  const res = await call(service, "GET", `/${AGENT}/history?thread_id=${encodeURIComponent(threadId)}&user_id=${encodeURIComponent(userId)}`);
  if (res.status === 404 && ((await res.clone().json()) as { detail?: string }).detail === "Not found.") {
    return storedMessages(service, storageKey(userId, AGENT, threadId));
  }
  assert.equal(res.status, 200);
  const page = (await res.json()) as { messages: Array<{ type: string; content: unknown }> };
  return page.messages.map((m) => [m.type, m.content]);
}

test("conversations written by the service move to their new owner and the service continues them", async () => {
  const dir = mkdtempSync(join(tmpdir(), "agenthost-maintenance-service-"));
  const env = { MEMORY_BACKEND: "filedb", FILEDB_DB_PATH: join(dir, "agenthost.sqlite") };
  let service = await startService(env);
  let running = true;
  try {
    // A conversation stored under old-owner's key, over HTTP, and a legacy raw-id thread as release
    // 0.9.2 stored it: the service's own agent graph and saver with the public id as thread id.
    await invoke(service, "old-owner", "conv-1", "hello");
    await invoke(service, "old-owner", "conv-1", "second turn");
    const agent = service.runtime.registry.get(AGENT);
    assert.ok(agent);
    await agent.graph.invoke({ messages: [new HumanMessage("from the old release")] }, {
      configurable: { thread_id: "legacy-7" },
      durability: "sync",
    });
    const oldKey = storageKey("old-owner", AGENT, "conv-1");
    const conversation = await storedMessages(service, oldKey);
    const legacy = await storedMessages(service, "legacy-7");
    assert.equal(conversation.length, 4);
    assert.equal(legacy.length, 2);
    running = false;
    await service.close(); // stop every worker before maintenance

    const manifest = join(dir, "manifest.json");
    writeFileSync(
      manifest,
      JSON.stringify([
        { old_thread_id: oldKey, user_id: "alice", agent_id: AGENT, thread_id: "conv-1" },
        { old_thread_id: "legacy-7", user_id: "alice", agent_id: AGENT, thread_id: "imported-7" },
      ]),
    );
    const args = parseArgs(["--backend", "filedb", "--filedb-path", env.FILEDB_DB_PATH, "--manifest", manifest, "--apply=true"]);
    assert.equal(args.help, false);
    if (args.help) return;
    const report = (await runMaintenance(args, { readVariable: () => undefined })) as MigrationReport;
    assert.equal(report.applied, true);
    assert.deepEqual(report.mappings.map((m) => m.new_thread_id), [storageKey("alice", AGENT, "conv-1"), storageKey("alice", AGENT, "imported-7")]);

    // The service's message rows move with the conversation: nothing of them stays under the old key.
    const moved = report.mappings[0]!.rows;
    assert.ok((moved.agenthost_messages ?? 0) > 0, JSON.stringify(moved));
    const file = new Database(env.FILEDB_DB_PATH, { readonly: true });
    try {
      for (const table of ["agenthost_messages"]) {
        const left = file.prepare(`SELECT count(*) AS n FROM ${table} WHERE thread_id = ?`).get(oldKey) as { n: number };
        assert.equal(left.n, 0, table);
      }
    } finally {
      file.close();
    }

    service = await startService(env);
    running = true;
    assert.deepEqual(await ownersView(service, "alice", "conv-1"), conversation);
    assert.deepEqual(await ownersView(service, "alice", "imported-7"), legacy);
    assert.deepEqual(await ownersView(service, "old-owner", "conv-1"), [], "the old owner no longer sees it");

    // The service continues the migrated conversations for their new owner.
    await invoke(service, "alice", "conv-1", "third turn");
    await invoke(service, "alice", "imported-7", "hello again");
    const continued = await ownersView(service, "alice", "conv-1");
    assert.deepEqual(continued.slice(0, 4), conversation);
    assert.deepEqual(continued[4], ["human", "third turn"]);
    assert.equal(continued.length, 6);
    assert.deepEqual((await ownersView(service, "alice", "imported-7")).slice(0, 2), legacy);
  } finally {
    if (running) await service.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
