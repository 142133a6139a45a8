// History read, paging, append, clear and identity rules through real HTTP, on the memory,
// SQLite and PostgreSQL backends.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { storageKey } from "../../src/auth/storage-key.ts";
import { MessageStoreSaver } from "../../src/checkpoints/message-store.ts";
import { call, startService, type RunningService } from "../helpers/service.ts";
import { ALL_BACKENDS } from "./history-backends.ts";

const AGENT = "chatbot-agent";

type Page = { messages: Array<Record<string, unknown>>; total: number; next_offset: number | null };

async function page(service: RunningService, query: string): Promise<Page> {
  const res = await call(service, "GET", `/${AGENT}/history?${query}`);
  assert.equal(res.status, 200, await res.clone().text());
  return (await res.json()) as Page;
}

async function append(service: RunningService, body: Record<string, unknown>): Promise<Response> {
  return call(service, "POST", `/${AGENT}/history/add_messages`, body);
}

const seven = Array.from({ length: 7 }, (_, i) => ({ type: i % 2 === 0 ? "human" : "ai", content: `message ${i}` }));

for (const makeBackend of ALL_BACKENDS) {
  const backend = makeBackend();
  describe(`history on ${backend.name}`, () => {
    let service: RunningService;
    before(async () => {
      service = await startService(backend.env);
    });
    after(async () => {
      await service.close();
      await backend.cleanup();
    });

    test("paging walks 7 messages in pages of 3, next_offset null at the end", async () => {
      const res = await append(service, { thread_id: "paging", messages: seven });
      assert.equal(res.status, 201);
      assert.deepEqual(await res.json(), {
        status: "success",
        thread_id: "paging",
        user_id: null,
        message: "Added 7 messages to chat history.",
        added: 7,
        total: 7,
      });

      const seen: unknown[] = [];
      const offsets: Array<number | null> = [];
      let offset: number | null = 0;
      while (offset !== null) {
        const p = await page(service, `thread_id=paging&limit=3&offset=${offset}`);
        assert.equal(p.total, 7);
        seen.push(...p.messages.map((m) => m.content));
        offsets.push(p.next_offset);
        offset = p.next_offset;
      }
      assert.deepEqual(offsets, [3, 6, null]);
      assert.deepEqual(seen, seven.map((m) => m.content));
      // Past the end: an empty last page.
      assert.deepEqual(await page(service, "thread_id=paging&offset=50"), { messages: [], total: 7, next_offset: null });
      // The default page holds everything here.
      const all = await page(service, "thread_id=paging");
      assert.equal(all.messages.length, 7);
      assert.equal(all.next_offset, null);
    });

    test("limit 0 or above 1000, offset -1, non-numbers and a missing thread_id answer 422", async () => {
      for (const query of [
        "thread_id=t&limit=0",
        "thread_id=t&limit=1001",
        "thread_id=t&limit=9999999",
        "thread_id=t&offset=-1",
        "thread_id=t&limit=abc",
        "thread_id=t&offset=1.5",
        "thread_id=t&limit=1&limit=2",
        "user_id=someone",
        "",
      ]) {
        const res = await call(service, "GET", `/${AGENT}/history?${query}`);
        assert.equal(res.status, 422, query);
        const body = (await res.json()) as { detail: string; error_code: string };
        assert.equal(body.error_code, "validation_failed");
      }
      const tooLarge = (await (await call(service, "GET", `/${AGENT}/history?thread_id=t&limit=1001`)).json()) as { detail: string };
      assert.match(tooLarge.detail, /limit/);
      assert.match(tooLarge.detail, /from 1 to 1000/);
      assert.equal((await call(service, "GET", `/${AGENT}/history?thread_id=t&limit=1000`)).status, 200);
    });

    test("every message type is readable; AI entries keep usage and response metadata; no run id or proof", async () => {
      const res = await append(service, {
        thread_id: "types",
        messages: [
          { type: "custom", content: "", custom_data: { step: "plan" } },
          { type: "human", content: [{ type: "text", text: "hello" }] },
          {
            type: "ai",
            content: "hi",
            usage_metadata: { input_tokens: 3, output_tokens: 1, total_tokens: 4 },
            response_metadata: { finish_reason: "stop", model_name: "imported" },
          },
          { type: "tool", content: "42", tool_call_id: "call-1" },
        ],
      });
      assert.equal(res.status, 201);
      const p = await page(service, "thread_id=types");
      assert.deepEqual(p.messages.map((m) => m.type), ["custom", "human", "ai", "tool"]);
      assert.deepEqual(p.messages[0]!.custom_data, { step: "plan" });
      const ai = p.messages[2]!;
      assert.deepEqual(ai.usage_metadata, { input_tokens: 3, output_tokens: 1, total_tokens: 4 });
      assert.deepEqual(ai.response_metadata, { finish_reason: "stop", model_name: "imported" });
      assert.equal(p.messages[3]!.tool_call_id, "call-1");
      for (const message of p.messages) {
        assert.equal(message.thread_id, "types");
        assert.equal(message.run_id, null);
        assert.equal("feedback_token" in message, false);
      }
    });

    test("append rejects bad entries with 422", async () => {
      for (const body of [
        { thread_id: "bad", messages: [] },
        { messages: [{ type: "human", content: "x" }] },
        { thread_id: "bad", messages: [{ type: "human", content: "x", usage_metadata: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } }] },
        { thread_id: "bad", messages: [{ type: "robot", content: "x" }] },
        { thread_id: "bad", messages: [{ type: "tool", content: "x" }] },
        { thread_id: "bad", messages: [{ type: "system", content: "You are terse." }] },
        { thread_id: "bad", messages: [{ type: "human", content: "x", tool_calls: [{ name: "f", args: {}, id: "c" }] }] },
        { thread_id: "bad", messages: [{ type: "ai", content: "x", custom_data: { a: 1 } }] },
      ]) {
        assert.equal((await append(service, body)).status, 422, JSON.stringify(body));
      }
    });

    test("runs and appends build one conversation; the message store answers reads", async () => {
      const invoke = await call(service, "POST", `/${AGENT}/invoke`, { input: { message: "first" }, thread_id: "mixed" });
      assert.equal(invoke.status, 200);
      assert.equal((await append(service, { thread_id: "mixed", messages: [{ type: "human", content: "imported" }] })).status, 201);
      assert.equal((await call(service, "POST", `/${AGENT}/invoke`, { input: { message: "second" }, thread_id: "mixed" })).status, 200);
      const p = await page(service, "thread_id=mixed");
      assert.deepEqual(
        p.messages.map((m) => `${m.type}:${String(m.content).slice(0, 9)}`),
        ["human:first", "ai:This is a", "human:imported", "human:second", "ai:This is a"],
      );
      // The model saw the imported message: the conversation continued from the new list.
      const saver = service.runtime.checkpoints.saver;
      assert.ok(saver instanceof MessageStoreSaver);
      const key = storageKey("service", AGENT, "mixed");
      const indexed = await saver.readPage(key, 1, 2);
      assert.ok(indexed, "the message store answers for the latest checkpoint");
      assert.equal(indexed.total, 5);
      assert.equal(indexed.messages.length, 2);
    });

    test("two users on one public thread id never see each other's history", async () => {
      assert.equal((await append(service, { thread_id: "shared", user_id: "alice", messages: [{ type: "human", content: "alice's secret" }] })).status, 201);
      assert.equal((await append(service, { thread_id: "shared", user_id: "bob", messages: [{ type: "human", content: "bob's note" }] })).status, 201);
      const alice = await page(service, "thread_id=shared&user_id=alice");
      const bob = await page(service, "thread_id=shared&user_id=bob");
      const nobody = await page(service, "thread_id=shared");
      assert.deepEqual(alice.messages.map((m) => m.content), ["alice's secret"]);
      assert.deepEqual(bob.messages.map((m) => m.content), ["bob's note"]);
      assert.equal(nobody.total, 0);
      // Another agent with the same user and thread id is another conversation too.
      const other = await call(service, "GET", "/create-agent/history?thread_id=shared&user_id=alice");
      assert.equal(((await other.json()) as Page).total, 0);
      // Clearing bob's conversation leaves alice's.
      assert.equal((await call(service, "DELETE", `/${AGENT}/history/clear`, { thread_id: "shared", user_id: "bob" })).status, 200);
      assert.equal((await page(service, "thread_id=shared&user_id=alice")).total, 1);
      assert.equal((await page(service, "thread_id=shared&user_id=bob")).total, 0);
    });

    test("clear deletes every checkpoint, blob, write and message row of the thread, and nothing else", async () => {
      for (const thread of ["doomed", "kept"]) {
        assert.equal((await call(service, "POST", `/${AGENT}/invoke`, { input: { message: "hi" }, thread_id: thread })).status, 200);
        assert.equal((await append(service, { thread_id: thread, messages: seven })).status, 201);
      }
      const doomed = storageKey("service", AGENT, "doomed");
      const kept = storageKey("service", AGENT, "kept");
      if (backend.name !== "memory") {
        const before = await backend.rowsOf(doomed);
        assert.ok(Object.values(before).every((n) => n > 0), `rows before clear: ${JSON.stringify(before)}`);
      }

      const res = await call(service, "DELETE", `/${AGENT}/history/clear`, { thread_id: "doomed" });
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), {
        status: "success",
        thread_id: "doomed",
        user_id: null,
        message: "Deleted all checkpoints for this conversation.",
        cleared: true,
      });

      if (backend.name !== "memory") {
        // One emptied message row stays: it keeps the thread's message keys from being reused (message-rows.ts).
        const { agenthost_messages: placeholder = 0, ...rows } = await backend.rowsOf(doomed);
        assert.ok(Object.values(rows).every((n) => n === 0), `rows left after clear: ${JSON.stringify(rows)}`);
        assert.ok(placeholder <= 1, `message rows left after clear: ${placeholder}`);
        const other = await backend.rowsOf(kept);
        assert.ok(Object.values(other).every((n) => n > 0), `the other thread lost rows: ${JSON.stringify(other)}`);
      }
      assert.equal((await page(service, "thread_id=doomed")).total, 0);
      assert.equal((await page(service, "thread_id=kept")).total, 9);
      // The conversation starts afresh afterwards.
      assert.equal((await call(service, "POST", `/${AGENT}/invoke`, { input: { message: "again" }, thread_id: "doomed" })).status, 200);
      assert.equal((await page(service, "thread_id=doomed")).total, 2);
    });

    test("clear accepts query parameters and requires a thread_id", async () => {
      assert.equal((await append(service, { thread_id: "by-query", user_id: "carol", messages: seven })).status, 201);
      const res = await call(service, "DELETE", `/${AGENT}/history/clear?thread_id=by-query&user_id=carol`);
      assert.equal(res.status, 200);
      assert.equal((await page(service, "thread_id=by-query&user_id=carol")).total, 0);
      assert.equal((await call(service, "DELETE", `/${AGENT}/history/clear`)).status, 422);
      assert.equal((await call(service, "DELETE", `/${AGENT}/history/clear`, { user_id: "carol" })).status, 422);
      assert.equal((await call(service, "DELETE", `/${AGENT}/history/clear?thread_id=a`, { thread_id: "b" })).status, 422);
    });

    test("append and clear take the conversation lock (busy: 409); reads do not", async () => {
      assert.equal((await append(service, { thread_id: "locked", messages: seven })).status, 201);
      const key = storageKey("service", AGENT, "locked");
      const held = await service.runtime.locks.acquire(key, new AbortController().signal);
      assert.ok(held.ok);
      try {
        const add = await append(service, { thread_id: "locked", messages: [{ type: "human", content: "x" }] });
        assert.equal(add.status, 409);
        assert.equal(((await add.json()) as { error_code: string }).error_code, "conversation_busy");
        assert.equal((await call(service, "DELETE", `/${AGENT}/history/clear`, { thread_id: "locked" })).status, 409);
        assert.equal((await page(service, "thread_id=locked")).total, 7);
      } finally {
        await held.lease.release();
      }
      assert.equal((await call(service, "DELETE", `/${AGENT}/history/clear`, { thread_id: "locked" })).status, 200);
    });

    test("the default-agent aliases serve the same conversations", async () => {
      assert.equal((await call(service, "POST", "/history/add_messages", { thread_id: "alias", messages: seven })).status, 201);
      assert.equal((await page(service, "thread_id=alias")).total, 7);
      const res = await call(service, "GET", "/history?thread_id=alias&limit=2");
      assert.equal(((await res.json()) as Page).next_offset, 2);
      assert.equal((await call(service, "DELETE", "/history/clear?thread_id=alias")).status, 200);
      assert.equal((await page(service, "thread_id=alias")).total, 0);
    });
  });
}
