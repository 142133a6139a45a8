// The conversation list and idempotency keys through bin/maintenance, on SQLite and PostgreSQL: the
// real service writes conversations, stops; migration moves them to a new owner (and lists a legacy
// raw-id thread for its owner); retention deletes old conversations with their list entries and
// idempotency keys.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HumanMessage } from "@langchain/core/messages";
import { storageKey } from "../../src/auth/storage-key.ts";
import { parseArgs } from "../../src/maintenance/args.ts";
import type { MigrationReport, RetentionReport } from "../../src/maintenance/report.ts";
import { runMaintenance } from "../../src/maintenance/run.ts";
import { DATABASE_URL, dropSchema, uniqueSchema } from "../helpers/postgres.ts";
import { waitFor } from "../helpers/raw-http.ts";
import { call, startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";

const AGENT = "chatbot-agent";

type Listed = { thread_id: string; title: string | null; message_count: number };
type ThreadPage = { threads: Listed[]; total: number };

async function invoke(service: RunningService, userId: string, threadId: string, message: string, key?: string): Promise<Response> {
  const headers: Record<string, string> = { "content-type": "application/json", authorization: `Bearer ${TEST_TOKEN}` };
  if (key) headers["idempotency-key"] = key;
  const res = await fetch(`${service.url}/${AGENT}/invoke`, {
    method: "POST",
    headers,
    body: JSON.stringify({ input: { message }, thread_id: threadId, user_id: userId }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  return res;
}

async function list(service: RunningService, userId: string): Promise<ThreadPage> {
  const res = await call(service, "GET", `/${AGENT}/threads?user_id=${userId}`);
  assert.equal(res.status, 200, await res.clone().text());
  return (await res.json()) as ThreadPage;
}

async function clockTick(): Promise<void> {
  const start = Date.now();
  await waitFor(() => Date.now() > start, "the next millisecond");
}

interface Target {
  readonly name: string;
  readonly env: Record<string, string>;
  readonly flags: string[];
  cleanup(): Promise<void>;
}

function filedb(): Target {
  const dir = mkdtempSync(join(tmpdir(), "agenthost-threads-maintenance-"));
  const file = join(dir, "agenthost.sqlite");
  return {
    name: "filedb",
    env: { MEMORY_BACKEND: "filedb", FILEDB_DB_PATH: file },
    flags: ["--backend", "filedb", "--filedb-path", file],
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

function serverdb(): Target {
  const schema = uniqueSchema("t_threads");
  return {
    name: "serverdb",
    env: { MEMORY_BACKEND: "serverdb", DATABASE_URL, SERVERDB_SCHEMA: schema },
    flags: ["--backend", "serverdb", "--schema", schema],
    cleanup: () => dropSchema(schema),
  };
}

async function maintenance(target: Target, extra: string[]): Promise<unknown> {
  const args = parseArgs([...target.flags, ...extra, "--apply=true"]);
  if (args.help) throw new Error("help");
  return runMaintenance(args, { readVariable: (name) => (name === "DATABASE_URL" ? DATABASE_URL : undefined) });
}

for (const make of [filedb, serverdb]) {
  const target = make();
  describe(`thread list through bin/maintenance on ${target.name}`, () => {
    test("migration lists moved conversations for their new owner; retention removes them and their keys", async () => {
      let service = await startService(target.env);
      let running = true;
      try {
        await invoke(service, "old-owner", "conv-1", "hello");
        await invoke(service, "old-owner", "conv-1", "second turn");
        await invoke(service, "alice", "old-idem", "keyed turn", "key-1");
        // A legacy raw-id thread as release 0.9.2 stored it: no owner, so not listed.
        const agent = service.runtime.registry.get(AGENT)!;
        await agent.graph.invoke({ messages: [new HumanMessage("from the old release")] }, { configurable: { thread_id: "legacy-7" }, durability: "sync" });
        assert.deepEqual((await list(service, "old-owner")).threads.map((t) => t.thread_id), ["conv-1"]);
        assert.deepEqual((await list(service, "alice")).threads.map((t) => t.thread_id), ["old-idem"]);
        running = false;
        await service.close();

        const dir = mkdtempSync(join(tmpdir(), "agenthost-manifest-"));
        const manifest = join(dir, "manifest.json");
        writeFileSync(
          manifest,
          JSON.stringify([
            { old_thread_id: storageKey("old-owner", AGENT, "conv-1"), user_id: "alice", agent_id: AGENT, thread_id: "conv-1" },
            { old_thread_id: "legacy-7", user_id: "alice", agent_id: AGENT, thread_id: "imported-7" },
          ]),
        );
        const migrated = (await maintenance(target, ["--manifest", manifest])) as MigrationReport;
        rmSync(dir, { recursive: true, force: true });
        assert.equal(migrated.applied, true);

        service = await startService(target.env);
        running = true;
        assert.equal((await list(service, "old-owner")).total, 0, "the old owner no longer lists it");
        const alice = await list(service, "alice");
        assert.deepEqual(
          alice.threads.map((t) => [t.thread_id, t.title, t.message_count]).sort(),
          [
            ["conv-1", "hello", 4],
            ["imported-7", "from the old release", 2],
            ["old-idem", "keyed turn", 2],
          ],
        );
        // The filled-in summary stays; a new turn updates it and moves the conversation first.
        await clockTick();
        await invoke(service, "alice", "imported-7", "hello again");
        const afterTurn = await list(service, "alice");
        assert.deepEqual(afterTurn.threads[0], { ...afterTurn.threads[0], thread_id: "imported-7", title: "from the old release", message_count: 4 });

        // Everything so far is older than the cutoff; one conversation is written after it.
        await clockTick();
        const cutoff = new Date().toISOString();
        await clockTick();
        await invoke(service, "alice", "recent", "after the cutoff");
        running = false;
        await service.close();

        const retained = (await maintenance(target, ["--before", cutoff])) as RetentionReport;
        assert.equal(retained.eligible_threads.length, 3, JSON.stringify(retained.eligible_threads));
        assert.equal(retained.rows.agenthost_threads, 3);
        assert.equal(retained.rows.agenthost_idempotency, 1);

        service = await startService(target.env);
        running = true;
        const left = await list(service, "alice");
        assert.deepEqual(left.threads.map((t) => t.thread_id), ["recent"]);
        assert.equal(left.total, 1);
        // The key went with its conversation: the same request runs again.
        const rerun = await invoke(service, "alice", "old-idem", "keyed turn", "key-1");
        assert.equal(rerun.headers.get("idempotent-replayed"), null);
        assert.equal((await list(service, "alice")).total, 2);
      } finally {
        if (running) await service.close();
        await target.cleanup();
      }
    });
  });
}
