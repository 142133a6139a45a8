// Identity rules of the history routes in token mode, HISTORY_MAX_PAGE_SIZE, and the message
// store on SQLite: conversations written before it, and what one turn stores.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import Database from "../../src/checkpoints/sqlite-driver.ts";
import { HumanMessage } from "@langchain/core/messages";
import { emptyCheckpoint } from "@langchain/langgraph-checkpoint";
import { storageKey } from "../../src/auth/storage-key.ts";
import { MessageStoreSaver } from "../../src/checkpoints/message-store.ts";
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

test("HISTORY_MAX_PAGE_SIZE lowers the maximum and the default page; a larger limit is capped to it, one above 1000 is still 422", async () => {
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
  const most = (await (await call(service, "GET", "/history?thread_id=long&limit=1000", undefined, users.alice)).json()) as { messages: unknown[] };
  assert.equal(most.messages.length, 50, "1000 is within the spec's range, then capped");
  const refused = await call(service, "GET", "/history?thread_id=long&limit=1001", undefined, users.alice);
  assert.equal(refused.status, 422);
  assert.equal(((await refused.json()) as { error_code: string }).error_code, "validation_failed");
});

test("a conversation written before the message store (its list inline) reads, continues, and is then stored once", async () => {
  const backend = sqliteBackend();
  const sqlite = await startService(backend.env);
  try {
    const saver = sqlite.runtime.checkpoints.saver;
    assert.ok(saver instanceof MessageStoreSaver);
    const key = storageKey("service", "chatbot-agent", "legacy");
    const checkpoint = emptyCheckpoint();
    checkpoint.channel_values = { messages: Array.from({ length: 250 }, (_, i) => new HumanMessage({ id: `m${i}`, content: `m${i}` })) };
    checkpoint.channel_versions = { messages: 1 };
    await saver.inner.put({ configurable: { thread_id: key, checkpoint_ns: "" } }, checkpoint, { source: "update", step: -1, parents: {} }, { messages: 1 });

    const page = (await (await call(sqlite, "GET", "/history?thread_id=legacy&offset=180&limit=30")).json()) as {
      messages: Array<{ content: string }>;
      total: number;
      next_offset: number | null;
    };
    assert.equal(page.total, 250);
    assert.deepEqual(page.messages.map((m) => m.content), Array.from({ length: 30 }, (_, i) => `m${180 + i}`));
    assert.equal(page.next_offset, 210);

    assert.equal((await call(sqlite, "POST", "/invoke", { input: { message: "new" }, thread_id: "legacy" })).status, 200);
    const db = new Database(backend.env.FILEDB_DB_PATH!, { readonly: true });
    const stored = (db.prepare("SELECT count(*) AS n FROM agenthost_messages WHERE thread_id = ?").get(key) as { n: number }).n;
    db.close();
    assert.equal(stored, 252, "the next write stored each message once");
    const last = (await (await call(sqlite, "GET", "/history?thread_id=legacy&offset=249&limit=5")).json()) as { messages: Array<{ content: string }>; total: number };
    assert.deepEqual(last.messages.map((m) => m.content), ["m249", "new", "This is a test response from the fake model."]);
  } finally {
    await sqlite.close();
    await backend.cleanup();
  }
});

test("a turn stores only its new messages; a checkpoint's size does not grow with the conversation", async () => {
  const backend = sqliteBackend();
  const sqlite = await startService(backend.env);
  const db = () => new Database(backend.env.FILEDB_DB_PATH!, { readonly: true });
  const facts = () => {
    const handle = db();
    try {
      return {
        rows: (handle.prepare("SELECT count(*) AS n FROM agenthost_messages").get() as { n: number }).n,
        checkpointBytes: (handle.prepare("SELECT length(checkpoint) AS n FROM checkpoints ORDER BY checkpoint_id DESC LIMIT 1").get() as { n: number }).n,
      };
    } finally {
      handle.close();
    }
  };
  try {
    const messages = Array.from({ length: 250 }, (_, i) => ({ type: "human", content: `m${i}` }));
    assert.equal((await call(sqlite, "POST", "/history/add_messages", { thread_id: "rows", messages })).status, 201);
    const small = facts();
    assert.equal(small.rows, 250);
    assert.equal((await call(sqlite, "POST", "/history/add_messages", { thread_id: "rows", messages })).status, 201);
    assert.equal((await call(sqlite, "POST", "/invoke", { input: { message: "one more" }, thread_id: "rows" })).status, 200);
    const large = facts();
    assert.equal(large.rows, 502, "250 + 250 appended + the turn's question and answer");
    assert.ok(large.checkpointBytes < 2_000 && large.checkpointBytes <= small.checkpointBytes + 200, JSON.stringify({ small, large }));
    const page = (await (await call(sqlite, "GET", "/history?thread_id=rows&offset=499&limit=5")).json()) as { messages: Array<{ content: string }>; total: number };
    assert.deepEqual(page.messages.map((m) => m.content), ["m249", "one more", "This is a test response from the fake model."]);
    assert.equal(page.total, 502);
  } finally {
    await sqlite.close();
    await backend.cleanup();
  }
});
