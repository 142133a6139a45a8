// Hostile input is a 4xx (issue 11, failures 5, 6 and 12): free-form JSON is bounded at validation,
// a conversation that cannot be revived answers a clear 409 and still reads, agent_config cannot
// select a checkpoint, and CONVERSATION_MAX_MESSAGES caps a conversation. Memory, SQLite, PostgreSQL.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { AIMessage, HumanMessage, isBaseMessage, type BaseMessage } from "@langchain/core/messages";
import { storageKey } from "../../src/auth/storage-key.ts";
import { ConversationStore } from "../../src/checkpoints/conversation-store.ts";
import { isMessageRefs } from "../../src/checkpoints/message-store.ts";
import { messageStoreOf } from "../../src/checkpoints/timed-saver.ts";
import { FORBIDDEN_AGENT_CONFIG_KEYS } from "../../src/contract/requests.ts";
import { JSON_MAX_BYTES, JSON_MAX_DEPTH } from "../../src/contract/json-bounds.ts";
import { call, startService, type RunningService } from "../helpers/service.ts";
import { ALL_BACKENDS, sqliteBackend } from "./history-backends.ts";

const AGENT = "chatbot-agent";

/** `{"a": {"a": … "x" …}}` with `levels` objects. */
function nested(levels: number): Record<string, unknown> {
  let value: unknown = "x";
  for (let i = 0; i < levels; i++) value = { a: value };
  return value as Record<string, unknown>;
}

/** The same as JSON text, for depths JSON.stringify cannot reach. */
function nestedText(levels: number): string {
  return `${'{"a":'.repeat(levels)}"x"${"}".repeat(levels)}`;
}

type Answer = { status: number; body: Record<string, unknown> };

async function send(service: RunningService, method: string, path: string, body?: unknown): Promise<Answer> {
  const res = await call(service, method, path, body);
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

function aiWith(fields: Record<string, unknown>): Record<string, unknown> {
  return { type: "ai", content: "stored", ...fields };
}

/** Every free-form field, with a value placed at `value`, as the request that carries it. */
function carriers(value: Record<string, unknown>): Array<{ field: string; method: string; path: string; body: unknown }> {
  const append = (message: Record<string, unknown>) => ({ thread_id: "bounded", messages: [message] });
  const run = (extra: Record<string, unknown>) => ({ thread_id: "bounded-run", input: { message: "hi" }, ...extra });
  return [
    { field: "messages.0.response_metadata", method: "POST", path: "/history/add_messages", body: append(aiWith({ response_metadata: value })) },
    {
      field: "messages.0.usage_metadata",
      method: "POST",
      path: "/history/add_messages",
      body: append(aiWith({ usage_metadata: { input_tokens: 1, output_tokens: 1, total_tokens: 2, details: value } })),
    },
    { field: "messages.0.custom_data", method: "POST", path: "/history/add_messages", body: append({ type: "custom", content: "", custom_data: value }) },
    {
      field: "messages.0.tool_calls.0.args",
      method: "POST",
      path: "/history/add_messages",
      body: append(aiWith({ tool_calls: [{ name: "lookup", id: "call-1", args: value }] })),
    },
    { field: "agent_config", method: "POST", path: "/invoke", body: run({ agent_config: value }) },
    { field: "input.answers", method: "POST", path: "/invoke", body: run({ input: { message: "hi", answers: value } }) },
    { field: "agent_config", method: "POST", path: "/stream", body: run({ agent_config: value }) },
    { field: "resume", method: "POST", path: "/resume", body: { thread_id: "bounded-run", resume: value } },
    { field: "kwargs", method: "POST", path: "/feedback", body: { run_id: "r", key: "k", score: 1, kwargs: value } },
    { field: "rating_context", method: "POST", path: "/feedback", body: { run_id: "r", key: "k", score: 1, rating_context: value } },
  ];
}

describe("free-form JSON fields are bounded at validation", () => {
  let service: RunningService;
  before(async () => {
    service = await startService();
  });
  after(() => service.close());

  test(`nested deeper than ${JSON_MAX_DEPTH} levels: 422 naming the field, nothing stored`, async () => {
    for (const carrier of carriers(nested(JSON_MAX_DEPTH + 1))) {
      const answer = await send(service, carrier.method, carrier.path, carrier.body);
      assert.equal(answer.status, 422, carrier.field);
      assert.equal(answer.body.error_code, "validation_failed");
      assert.ok(String(answer.body.detail).startsWith(`${carrier.field}`), `${carrier.field}: ${String(answer.body.detail)}`);
      assert.match(String(answer.body.detail), new RegExp(`nested deeper than ${JSON_MAX_DEPTH} levels`));
    }
    assert.equal((await send(service, "GET", "/history?thread_id=bounded")).body.total, 0);
  });

  test(`larger than ${JSON_MAX_BYTES} bytes: 422 naming the field`, async () => {
    for (const carrier of carriers({ blob: "y".repeat(JSON_MAX_BYTES) })) {
      const answer = await send(service, carrier.method, carrier.path, carrier.body);
      assert.equal(answer.status, 422, carrier.field);
      assert.match(String(answer.body.detail), new RegExp(`^${carrier.field.replace(/\./g, "\\.")}.*larger than ${JSON_MAX_BYTES} bytes`));
    }
  });

  test("LangChain serialization markers (an object with an lc key) are refused wherever free-form JSON is accepted", async () => {
    // Stored, either would be acted on when the conversation is read back: a secret fails to load
    // (the conversation becomes unreadable), a constructor is instantiated.
    const markers = [
      { lc: 1, type: "secret", id: ["AUTH_SECRET"] },
      { lc: 1, type: "constructor", id: ["langchain_core", "messages", "HumanMessage"], kwargs: { content: "injected" } },
      { lc: 2, type: "undefined" },
    ];
    for (const marker of markers) {
      for (const carrier of carriers({ nested: [marker] })) {
        const answer = await send(service, carrier.method, carrier.path, carrier.body);
        assert.equal(answer.status, 422, carrier.field);
        assert.match(String(answer.body.detail), /holds an object with an "lc" key/, carrier.field);
      }
    }
    assert.equal((await send(service, "GET", "/history?thread_id=bounded")).body.total, 0);
  });

  test("keys naming built-in object members (__proto__, constructor, toString, …) are refused anywhere in a body", async () => {
    const cases: Array<[string, string, string]> = [
      ["/invoke", '{"input":{"message":"x","toString":"text"},"thread_id":"shadow"}', "input.toString"],
      ["/invoke", '{"input":{"message":"x"},"thread_id":"shadow","agent_config":{"a":[{"__proto__":{"polluted":true}}]}}', "agent_config.a.0.__proto__"],
      ["/history/add_messages", '{"thread_id":"shadow","messages":[{"type":"ai","content":"","response_metadata":{"constructor":{"prototype":1}}}]}', "messages.0.response_metadata.constructor"],
      ["/feedback", '{"run_id":"r","key":"k","score":1,"valueOf":1}', "valueOf"],
      ["/resume", '{"thread_id":"shadow","resume":{"hasOwnProperty":"x"}}', "resume.hasOwnProperty"],
    ];
    for (const [path, body, field] of cases) {
      const res = await call(service, "POST", path, body);
      assert.equal(res.status, 422, path);
      const error = (await res.json()) as { detail: string };
      assert.ok(error.detail.startsWith(`${field}: this key names a member every JavaScript object has`), error.detail);
    }
    assert.equal(({} as { polluted?: unknown }).polluted, undefined);
  });

  test("the issue's reproduction: response_metadata nested 49 levels is refused and the conversation stays usable", async () => {
    const thread = "issue-5";
    const poisoned = await send(service, "POST", "/history/add_messages", { thread_id: thread, messages: [aiWith({ response_metadata: nested(49) })] });
    assert.equal(poisoned.status, 422);
    assert.equal(poisoned.body.detail, `messages.0.response_metadata: nested deeper than ${JSON_MAX_DEPTH} levels`);
    assert.equal((await send(service, "POST", "/invoke", { thread_id: thread, input: { message: "still fine?" } })).status, 200);
    assert.equal((await send(service, "GET", `/history?thread_id=${thread}`)).body.total, 2);
  });

  test("feedback metadata nested 5,000 levels is a 422, not a stack overflow", async () => {
    for (const field of ["metadata_blob", "kwargs"]) {
      const body = `{"run_id":"r","key":"k","score":1,"${field}":${nestedText(5000)}}`;
      const res = await call(service, "POST", "/feedback", body);
      assert.equal(res.status, 422, field);
      assert.deepEqual(await res.json(), { detail: `${field}: nested deeper than ${JSON_MAX_DEPTH} levels`, error_code: "validation_failed" });
    }
  });

  test("agent_config refuses thread_ts and every other checkpoint selector or identity key LangGraph reads", async () => {
    const keys = [...FORBIDDEN_AGENT_CONFIG_KEYS, "__pregel_checkpointer", "__anything"];
    for (const required of ["thread_ts", "checkpoint_id", "checkpoint_ns", "checkpoint_map", "task_id", "langgraph_auth_user"]) {
      assert.ok(keys.includes(required), required);
    }
    for (const key of keys) {
      for (const route of ["invoke", "stream", "stream/jsonl"]) {
        const answer = await send(service, "POST", `/${route}`, { thread_id: "selectors", input: { message: "x" }, agent_config: { [key]: "1ef0" } });
        assert.equal(answer.status, 422, `${route} ${key}`);
        assert.equal(answer.body.detail, `agent_config.${key}: agent_config may not set "${key}"`);
      }
    }
    // Ordinary keys still reach the agent.
    assert.equal((await send(service, "POST", "/invoke", { thread_id: "selectors", input: { message: "x" }, agent_config: { tone: "dry" } })).status, 200);
  });
});

for (const makeBackend of ALL_BACKENDS) {
  const backend = makeBackend();
  describe(`stored free-form JSON on ${backend.name}`, () => {
    let service: RunningService;
    before(async () => {
      service = await startService(backend.env);
    });
    after(async () => {
      await service.close();
      await backend.cleanup();
    });

    test(`fields nested exactly ${JSON_MAX_DEPTH} levels are stored, read back and run`, async () => {
      const deep = nested(JSON_MAX_DEPTH);
      const messages = [
        aiWith({ response_metadata: deep, usage_metadata: { input_tokens: 1, output_tokens: 1, total_tokens: 2, details: nested(JSON_MAX_DEPTH - 1) } }),
        aiWith({ tool_calls: [{ name: "lookup", id: "call-1", args: deep }] }),
        { type: "tool", content: "result", tool_call_id: "call-1" },
        { type: "custom", content: "", custom_data: deep },
      ];
      const added = await send(service, "POST", "/history/add_messages", { thread_id: "at-bound", messages });
      assert.equal(added.status, 201, JSON.stringify(added.body));
      const page = await send(service, "GET", "/history?thread_id=at-bound");
      assert.equal(page.status, 200);
      const stored = page.body.messages as Array<Record<string, unknown>>;
      assert.deepEqual((stored[1]!.tool_calls as Array<Record<string, unknown>>)[0]!.args, deep);
      assert.deepEqual(stored[3]!.custom_data, deep);
      const ran = await send(service, "POST", "/invoke", { thread_id: "at-bound", input: { message: "go on" }, agent_config: nested(JSON_MAX_DEPTH) });
      assert.equal(ran.status, 200, JSON.stringify(ran.body));
    });

    test("a conversation stored before the bounds answers 409 conversation_unreadable, still reads, and clears", async () => {
      // Written past validation, as an older release would have stored it.
      const agent = service.runtime.registry.get(AGENT)!;
      const key = storageKey("service", AGENT, "poisoned");
      const before: BaseMessage[] = Array.from({ length: 150 }, (_, i) => new HumanMessage(`m${i}`));
      await service.runtime.conversations.append(agent, key, before);
      await service.runtime.conversations.append(agent, key, [new AIMessage({ content: "deep", response_metadata: nested(60) }), new HumanMessage("after")]);
      // This worker still holds the live objects it stored; any other worker (or this one after a
      // restart) must revive them from the rows, and that is where the stored data fails.
      const saver = messageStoreOf(agent.graph.checkpointer);
      assert.ok(saver);
      saver.discard(key);

      // Runs, streams, resumes and appends refuse it with a clear 4xx, every time.
      for (let attempt = 0; attempt < 2; attempt++) {
        for (const [method, path, body] of [
          ["POST", "/invoke", { thread_id: "poisoned", input: { message: "x" } }],
          ["POST", "/stream", { thread_id: "poisoned", input: { message: "x" } }],
          ["POST", "/stream/jsonl", { thread_id: "poisoned", input: { message: "x" } }],
          ["POST", "/resume", { thread_id: "poisoned", resume: "yes" }],
          ["POST", "/history/add_messages", { thread_id: "poisoned", messages: [{ type: "human", content: "x" }] }],
        ] as const) {
          const answer = await send(service, method, path, body);
          assert.equal(answer.status, 409, `${path}: ${JSON.stringify(answer.body)}`);
          assert.equal(answer.body.error_code, "conversation_unreadable");
          assert.match(String(answer.body.detail), /clear it with DELETE \/history\/clear/);
        }
      }

      // History reads every page; the unreadable message has a stand-in at its place.
      const first = await send(service, "GET", "/history?thread_id=poisoned&limit=100");
      assert.equal(first.status, 200);
      assert.equal(first.body.total, 152);
      assert.equal((first.body.messages as unknown[]).length, 100);
      const last = await send(service, "GET", "/history?thread_id=poisoned&offset=148&limit=10");
      assert.equal(last.status, 200);
      const tail = last.body.messages as Array<Record<string, unknown>>;
      assert.deepEqual(tail.map((m) => m.content), ["m148", "m149", tail[2]!.content, "after"]);
      assert.equal(tail[2]!.type, "custom");
      assert.deepEqual(tail[2]!.custom_data, { message_type: "unreadable" });

      // Clearing frees the thread for good.
      assert.equal((await send(service, "DELETE", "/history/clear", { thread_id: "poisoned" })).status, 200);
      assert.equal((await send(service, "POST", "/invoke", { thread_id: "poisoned", input: { message: "x" } })).status, 200);
    });
  });
}

describe("CONVERSATION_MAX_MESSAGES", () => {
  let service: RunningService;
  before(async () => {
    service = await startService({ CONVERSATION_MAX_MESSAGES: "5" });
  });
  after(() => service.close());

  const human = (n: number) => Array.from({ length: n }, (_, i) => ({ type: "human", content: `h${i}` }));

  test("an append past the cap is 413 conversation_too_long and writes nothing; one up to it is accepted", async () => {
    assert.equal((await send(service, "POST", "/history/add_messages", { thread_id: "cap", messages: human(3) })).status, 201);
    const refused = await send(service, "POST", "/history/add_messages", { thread_id: "cap", messages: human(3) });
    assert.equal(refused.status, 413);
    assert.deepEqual(refused.body, {
      detail:
        "The conversation holds 3 messages and this request would add 3; CONVERSATION_MAX_MESSAGES allows 5. Start a new thread_id, or clear this conversation.",
      error_code: "conversation_too_long",
    });
    assert.equal((await send(service, "GET", "/history?thread_id=cap")).body.total, 3);
    const filled = await send(service, "POST", "/history/add_messages", { thread_id: "cap", messages: human(2) });
    assert.equal(filled.status, 201);
    assert.equal(filled.body.total, 5);
  });

  test("a run on a full conversation is refused before it starts (413, before any stream header); a run with room goes ahead", async () => {
    assert.equal((await send(service, "POST", "/history/add_messages", { thread_id: "full", messages: human(4) })).status, 201);
    const ran = await send(service, "POST", "/invoke", { thread_id: "full", input: { message: "one more" } });
    assert.equal(ran.status, 200, "4 messages leave room for the next turn");
    for (const path of ["/invoke", "/stream", "/stream/jsonl"]) {
      const res = await call(service, "POST", path, { thread_id: "full", input: { message: "x" } });
      assert.equal(res.status, 413, path);
      assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
      const body = (await res.json()) as Record<string, unknown>;
      assert.equal(body.error_code, "conversation_too_long");
      assert.match(String(body.detail), /holds 6 messages/);
    }
    assert.equal((await send(service, "DELETE", "/history/clear", { thread_id: "full" })).status, 200);
    assert.equal((await send(service, "POST", "/invoke", { thread_id: "full", input: { message: "fresh" } })).status, 200);
  });

  test("the count comes from the message store: no message is revived to check it", async () => {
    const saver = messageStoreOf(service.runtime.registry.get(AGENT)!.graph.checkpointer);
    assert.ok(saver);
    assert.equal((await send(service, "POST", "/history/add_messages", { thread_id: "counted", messages: human(2) })).status, 201);
    const revive = saver.serde.loadsTyped.bind(saver.serde);
    let revived = 0;
    saver.serde.loadsTyped = async (type: string, data: Uint8Array | string) => {
      const value: unknown = await revive(type, data);
      if (isBaseMessage(value) || (Array.isArray(value) && value.some(isBaseMessage))) revived++;
      return value;
    };
    try {
      assert.equal((await service.runtime.conversations.head(storageKey("service", AGENT, "counted"))).messageCount, 2);
      assert.equal(revived, 0);
    } finally {
      saver.serde.loadsTyped = revive;
    }
  });
});

describe("CONVERSATION_MAX_MESSAGES on a thread written before the message store (SQLite)", () => {
  const backend = sqliteBackend();
  let service: RunningService;
  before(async () => {
    service = await startService({ ...backend.env, CONVERSATION_MAX_MESSAGES: "5" });
  });
  after(async () => {
    await service.close();
    await backend.cleanup();
  });

  test("the count falls back to the checkpoint itself", async () => {
    const agent = service.runtime.registry.get(AGENT)!;
    const saver = messageStoreOf(agent.graph.checkpointer);
    assert.ok(saver);
    // The library's own saver, without the message store, as an older release wrote conversations.
    const legacy = new ConversationStore(saver.inner);
    await legacy.append(agent, storageKey("service", AGENT, "legacy-full"), Array.from({ length: 5 }, (_, i) => new HumanMessage(`l${i}`)));
    await legacy.append(agent, storageKey("service", AGENT, "legacy-room"), [new HumanMessage("l0")]);
    const latest = await saver.inner.getTuple({ configurable: { thread_id: storageKey("service", AGENT, "legacy-full"), checkpoint_ns: "" } });
    assert.ok(latest && !isMessageRefs(latest.checkpoint.channel_values.messages), "a checkpoint with its list inline");

    assert.equal((await service.runtime.conversations.head(storageKey("service", AGENT, "legacy-full"))).messageCount, 5);
    const refused = await send(service, "POST", "/invoke", { thread_id: "legacy-full", input: { message: "x" } });
    assert.equal(refused.status, 413);
    assert.equal(refused.body.error_code, "conversation_too_long");
    assert.equal((await send(service, "POST", "/invoke", { thread_id: "legacy-room", input: { message: "x" } })).status, 200);
  });
});
