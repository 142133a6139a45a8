// Identity rules of the history routes in token mode, HISTORY_MAX_PAGE_SIZE, and the read
// path's fallback when a checkpoint has no index entry.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import Database from "better-sqlite3";
import { call, startService, type RunningService } from "../helpers/service.ts";
import { sqliteBackend } from "./history-backends.ts";

const users = { alice: "alice-token-0123456789", bob: "bob-token-0123456789" };
let service: RunningService;

before(async () => {
  service = await startService({ AUTH_MODE: "token", AUTH_USERS: JSON.stringify(users), HISTORY_MAX_PAGE_SIZE: "50" });
});
after(() => service.close());

test("token users read, append and clear only their own conversations", async () => {
  const add = await call(service, "POST", "/history/add_messages", { thread_id: "t", messages: [{ type: "human", content: "mine" }] }, users.alice);
  assert.equal(add.status, 201);
  // Naming themselves is allowed; naming anyone else is 403 on every route.
  const own = await call(service, "GET", "/history?thread_id=t&user_id=alice", undefined, users.alice);
  assert.equal(((await own.json()) as { total: number }).total, 1);
  for (const [method, path, body] of [
    ["GET", "/history?thread_id=t&user_id=alice", undefined],
    ["POST", "/history/add_messages", { thread_id: "t", user_id: "alice", messages: [{ type: "human", content: "x" }] }],
    ["DELETE", "/history/clear", { thread_id: "t", user_id: "alice" }],
  ] as const) {
    const res = await call(service, method, path, body, users.bob);
    assert.equal(res.status, 403, `${method} ${path}`);
  }
  // Bob's own view of thread "t" is his own (empty) conversation.
  const bob = await call(service, "GET", "/history?thread_id=t", undefined, users.bob);
  assert.equal(((await bob.json()) as { total: number }).total, 0);
  // The shared AUTH_SECRET in token mode is only the service user.
  const shared = await call(service, "GET", "/history?thread_id=t&user_id=alice");
  assert.equal(shared.status, 403);
  assert.equal((await call(service, "GET", "/history?thread_id=t")).status, 200);
  // Unauthenticated: 401.
  assert.equal((await call(service, "GET", "/history?thread_id=t", undefined, null)).status, 401);
});

test("HISTORY_MAX_PAGE_SIZE lowers the maximum and the default page; a larger limit is capped to it", async () => {
  const messages = Array.from({ length: 60 }, (_, i) => ({ type: "human", content: `m${i}` }));
  assert.equal((await call(service, "POST", "/history/add_messages", { thread_id: "long", messages }, users.alice)).status, 201);
  const res = await call(service, "GET", "/history?thread_id=long&offset=0&limit=100", undefined, users.alice);
  assert.equal(res.status, 200);
  const capped = (await res.json()) as { messages: unknown[]; next_offset: number | null };
  assert.equal(capped.messages.length, 50);
  assert.equal(capped.next_offset, 50);
  const page = (await (await call(service, "GET", "/history?thread_id=long", undefined, users.alice)).json()) as {
    messages: unknown[];
    next_offset: number | null;
  };
  assert.equal(page.messages.length, 50);
  assert.equal(page.next_offset, 50);
});

test("a checkpoint without an index entry is still read correctly (getState fallback)", async () => {
  const backend = sqliteBackend();
  const sqlite = await startService(backend.env);
  try {
    const messages = Array.from({ length: 250 }, (_, i) => ({ type: i % 2 ? "ai" : "human", content: `m${i}` }));
    assert.equal((await call(sqlite, "POST", "/history/add_messages", { thread_id: "legacy", messages })).status, 201);
    const db = new Database(backend.env.FILEDB_DB_PATH!);
    db.exec("DELETE FROM agenthost_history_index; DELETE FROM agenthost_history_chunks;");
    db.close();
    const page = (await (await call(sqlite, "GET", "/history?thread_id=legacy&offset=180&limit=30")).json()) as {
      messages: Array<{ content: string }>;
      total: number;
      next_offset: number | null;
    };
    assert.equal(page.total, 250);
    assert.deepEqual(page.messages.map((m) => m.content), Array.from({ length: 30 }, (_, i) => `m${180 + i}`));
    assert.equal(page.next_offset, 210);
    // The next write indexes the thread again.
    assert.equal((await call(sqlite, "POST", "/history/add_messages", { thread_id: "legacy", messages: [{ type: "human", content: "new" }] })).status, 201);
    const db2 = new Database(backend.env.FILEDB_DB_PATH!, { readonly: true });
    const entries = (db2.prepare("SELECT count(*) AS n FROM agenthost_history_index").get() as { n: number }).n;
    db2.close();
    assert.equal(entries, 1);
  } finally {
    await sqlite.close();
    await backend.cleanup();
  }
});

test("an append rewrites only the chunk it changes; old chunks are shared between checkpoints", async () => {
  const backend = sqliteBackend();
  const sqlite = await startService(backend.env);
  try {
    const messages = Array.from({ length: 250 }, (_, i) => ({ type: "human", content: `m${i}` }));
    assert.equal((await call(sqlite, "POST", "/history/add_messages", { thread_id: "chunks", messages })).status, 201);
    const count = () => {
      const db = new Database(backend.env.FILEDB_DB_PATH!, { readonly: true });
      try {
        return (db.prepare("SELECT count(*) AS n FROM agenthost_history_chunks").get() as { n: number }).n;
      } finally {
        db.close();
      }
    };
    assert.equal(count(), 3);
    assert.equal((await call(sqlite, "POST", "/history/add_messages", { thread_id: "chunks", messages: [{ type: "human", content: "one more" }] })).status, 201);
    assert.equal(count(), 4, "only the last (partial) chunk was written again");
    const page = (await (await call(sqlite, "GET", "/history?thread_id=chunks&offset=249&limit=5")).json()) as { messages: Array<{ content: string }>; total: number };
    assert.deepEqual(page.messages.map((m) => m.content), ["m249", "one more"]);
    assert.equal(page.total, 251);
  } finally {
    await sqlite.close();
    await backend.cleanup();
  }
});
