import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { storageKey } from "../../src/auth/storage-key.ts";
import { FAKE_MODEL_ANSWER } from "../../src/models/fake-chat-model.ts";
import { streamRun } from "../../src/runs/execute.ts";
import { prepareRun } from "../../src/runs/prepare.ts";
import { call, startService, type RunningService } from "../helpers/service.ts";
import { parseJsonl, parseSse } from "../helpers/streams.ts";

const AGENTS = JSON.stringify([
  "./test/fixtures/spine-agents.ts:whoami",
  "./test/fixtures/spine-agents.ts:failingAgent",
  "./test/fixtures/spine-agents.ts:loopingAgent",
]);

describe("runs", () => {
  let service: RunningService;
  before(async () => {
    service = await startService({ AGENT_PATHS: AGENTS });
  });
  after(() => service.close());

  test("invoke returns a complete ChatMessage and creates a thread id when omitted", async () => {
    const res = await call(service, "POST", "/invoke", { input: { message: "hello" } });
    assert.equal(res.status, 200);
    const message = (await res.json()) as Record<string, unknown>;
    assert.equal(message.type, "ai");
    assert.equal(message.content, FAKE_MODEL_ANSWER);
    assert.match(String(message.thread_id), /^[0-9a-f-]{36}$/);
    assert.match(String(message.run_id), /^[0-9a-f-]{36}$/);
    assert.notEqual(message.run_id, message.thread_id);
    assert.deepEqual(message.tool_calls, []);
    assert.equal((message.response_metadata as Record<string, unknown>).finish_reason, "stop");
    const usage = message.usage_metadata as Record<string, number>;
    assert.equal(usage.total_tokens, usage.input_tokens! + usage.output_tokens!);
    assert.equal(message.feedback_token, undefined, "the trusted shared secret gets no proof");

    // Reusing the returned thread id continues the conversation: the model sees more input.
    const again = (await (await call(service, "POST", "/chatbot-agent/invoke", {
      input: { message: "hello" },
      thread_id: message.thread_id,
    })).json()) as Record<string, unknown>;
    assert.equal(again.thread_id, message.thread_id);
    assert.ok(
      (again.usage_metadata as Record<string, number>).input_tokens! > usage.input_tokens!,
      "second turn carries the first turn's messages",
    );
  });

  test("usage_metadata is null when the model reports none, never a made-up zero", async () => {
    const res = await call(service, "POST", "/whoami/invoke", { input: { message: "x" } });
    const message = (await res.json()) as Record<string, unknown>;
    assert.equal(message.usage_metadata, null);
  });

  test("the graph receives the storage key as thread id, the user id, and agent_config", async () => {
    const res = await call(service, "POST", "/whoami/invoke", {
      input: { message: "x" },
      thread_id: "t-1",
      user_id: "ann",
      agent_config: { tag: "blue" },
    });
    const seen = JSON.parse(((await res.json()) as { content: string }).content) as Record<string, string>;
    assert.deepEqual(seen, { user_id: "ann", thread_id: storageKey("ann", "whoami", "t-1"), tag: "blue" });
  });

  test("agent_config may not carry identity, checkpoint or internal keys", async () => {
    for (const key of ["thread_id", "user_id", "checkpoint_id", "checkpoint_ns", "__pregel_send", "__anything"]) {
      const res = await call(service, "POST", "/invoke", { input: { message: "x" }, agent_config: { [key]: "v" } });
      assert.equal(res.status, 422, key);
      const body = (await res.json()) as { detail: string; error_code: string };
      assert.equal(body.error_code, "validation_failed");
      assert.ok(body.detail.includes(key), body.detail);
    }
  });

  test("schema failures, unknown fields and malformed JSON get 422; unknown agents 404", async () => {
    const bad: unknown[] = [
      {},
      { input: {} },
      { input: { message: 5 } },
      { input: { message: "x", user_id: "ann" } },
      { input: { message: "x" }, thread_id: "" },
      { input: { message: "x" }, recursion_limit: 0 },
      { input: { message: "x" }, surprise: true },
      { input: { message: [{ type: "image" }] } },
      "{not json",
      "[]",
    ];
    for (const body of bad) {
      const res = await call(service, "POST", "/invoke", body);
      assert.equal(res.status, 422, JSON.stringify(body));
      const text = await res.text();
      assert.ok(!/at .+\.ts:\d+/.test(text), `stack trace in ${text}`);
      assert.equal(typeof (JSON.parse(text) as { detail: unknown }).detail, "string");
    }
    const missing = await call(service, "POST", "/nobody/invoke", { input: { message: "x" } });
    assert.equal(missing.status, 404);
    assert.equal(typeof ((await missing.json()) as { detail: unknown }).detail, "string");
    assert.equal((await call(service, "GET", "/nowhere")).status, 404);
  });

  test("model selection is refused for agents that do not support it", async () => {
    const res = await call(service, "POST", "/whoami/invoke", { input: { message: "x" }, model_name: "gpt" });
    assert.equal(res.status, 422);
    assert.match(((await res.json()) as { detail: string }).detail, /does not support runtime model selection/);
  });

  test("recursion_limit bounds graph steps: the caller's limit is a 422, the service default a 500", async () => {
    const chosen = await call(service, "POST", "/looping-agent/invoke", { input: { message: "x" }, recursion_limit: 3 });
    assert.equal(chosen.status, 422);
    assert.deepEqual(await chosen.json(), {
      detail: "The run reached the recursion_limit the request set before finishing; raise recursion_limit or simplify the request.",
      error_code: "recursion_limit_exceeded",
    });
    // The chatbot needs two steps; a limit of 1 is the caller's choice, not a server error.
    const one = await call(service, "POST", "/chatbot-agent/invoke", { input: { message: "x" }, recursion_limit: 1 });
    assert.equal(one.status, 422);
    const streamed = await call(service, "POST", "/chatbot-agent/stream/jsonl", { input: { message: "x" }, recursion_limit: 1 });
    const lines = (await streamed.text()).trim().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
    assert.equal(lines.at(-1)?.error_code, "recursion_limit_exceeded");

    const byDefault = await call(service, "POST", "/looping-agent/invoke", { input: { message: "x" } });
    assert.equal(byDefault.status, 500);
    assert.equal(((await byDefault.json()) as { error_code: string }).error_code, "recursion_limit_exceeded");
  });

  test("a failing run answers without its error text", async () => {
    const res = await call(service, "POST", "/failing-agent/invoke", { input: { message: "x" } });
    assert.equal(res.status, 500);
    const text = await res.text();
    assert.ok(!text.includes("hunter2"));
    assert.deepEqual(JSON.parse(text), { detail: "The agent run failed.", error_code: "run_failed" });
  });

  test("SSE with tokens: token events, the complete message, then [DONE]", async () => {
    const res = await call(service, "POST", "/chatbot-agent/stream", { input: { message: "hi" }, thread_id: "s1", stream_tokens: true });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
    const sse = parseSse(await res.text());
    assert.ok(sse.done);
    const tokens = sse.events.filter((e) => e.type === "token").map((e) => e.content as string);
    assert.ok(tokens.length > 1);
    assert.equal(tokens.join(""), FAKE_MODEL_ANSWER);
    const messages = sse.events.filter((e) => e.type === "message");
    assert.equal(messages.length, 1);
    const final = messages[0]!.content as Record<string, unknown>;
    assert.equal(final.content, FAKE_MODEL_ANSWER);
    assert.equal(final.thread_id, "s1");
    assert.equal(sse.events.at(-1)!.type, "message");
  });

  test("concurrent runs each stream every token before their final message", async () => {
    // Driven below HTTP so the runs truly overlap; LangChain's background callback queue used to
    // deliver tokens of overlapping runs after their streams had ended.
    const agent = service.runtime.registry.get("chatbot-agent")!;
    const principal = { kind: "shared-secret", boundUserId: undefined, needsFeedbackProof: false } as const;
    for (let round = 0; round < 4; round++) {
      const runs = Array.from({ length: 8 }, async (_, i) => {
        const threadId = `c${round}-${i}`;
        const conversation = { agent, userId: "service", threadId, storageKey: storageKey("service", agent.name, threadId) };
        const run = prepareRun(service.runtime.config, conversation, principal, { input: { message: "hi" }, thread_id: threadId }, service.runtime.models);
        const events: Array<{ type: string; content: unknown }> = [];
        for await (const event of streamRun(run, new AbortController().signal, { tokens: true })) events.push(event);
        return events;
      });
      for (const events of await Promise.all(runs)) {
        const tokens = events.filter((e) => e.type === "token").map((e) => e.content as string);
        assert.equal(tokens.join(""), FAKE_MODEL_ANSWER);
        assert.equal(events.at(-1)!.type, "message");
      }
    }
  });

  test("SSE without tokens: complete messages only", async () => {
    const res = await call(service, "POST", "/stream", { input: { message: "hi" }, stream_tokens: false });
    const sse = parseSse(await res.text());
    assert.ok(sse.done);
    assert.deepEqual(sse.events.map((e) => e.type), ["message"]);
  });

  test("JSON Lines: one object per line, no marker", async () => {
    const res = await call(service, "POST", "/stream/jsonl", { input: { message: "hi" }, stream_tokens: true });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^application\/jsonl/);
    const text = await res.text();
    assert.ok(!text.includes("[DONE]") && !text.includes("data:"));
    const events = parseJsonl(text);
    assert.ok(events.some((e) => e.type === "token"));
    assert.equal(events.at(-1)!.type, "message");
  });

  test("a run failing after headers ends with an error event and no [DONE]", async () => {
    const sseRes = await call(service, "POST", "/failing-agent/stream", { input: { message: "x" } });
    assert.equal(sseRes.status, 200);
    const text = await sseRes.text();
    assert.ok(!text.includes("hunter2"));
    const sse = parseSse(text);
    assert.equal(sse.done, false);
    assert.equal(sse.events[0]!.type, "message", "the message before the failure was streamed");
    assert.deepEqual(sse.events.at(-1), { type: "error", content: "The agent run failed.", error_code: "run_failed" });

    const jsonl = parseJsonl(await (await call(service, "POST", "/failing-agent/stream/jsonl", { input: { message: "x" } })).text());
    assert.equal(jsonl.at(-1)!.type, "error");
  });

  test("info lists agents as {key, description} and the default agent, never model configs", async () => {
    const res = await call(service, "GET", "/info");
    const info = (await res.json()) as { agents: Array<{ key: string; description: string }>; default_agent: string };
    assert.equal(info.default_agent, "chatbot-agent");
    const keys = info.agents.map((a) => a.key).sort();
    assert.deepEqual(keys, ["chatbot-agent", "create-agent", "deep-agent", "failing-agent", "looping-agent", "whoami"]);
    for (const agent of info.agents) assert.deepEqual(Object.keys(agent).sort(), ["description", "key"]);
  });

  test("create-agent (LangChain agent factory) answers through the fake model", async () => {
    const res = await call(service, "POST", "/create-agent/invoke", { input: { message: "what is 2+3?" } });
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as { content: string }).content, FAKE_MODEL_ANSWER);
  });
});

describe("development mode error events", () => {
  let service: RunningService;
  before(async () => {
    service = await startService({ ENV_MODE: "development", AGENT_PATHS: AGENTS });
  });
  after(() => service.close());

  test("name the failure for the agent author", async () => {
    const sse = parseSse(await (await call(service, "POST", "/failing-agent/stream", { input: { message: "x" } })).text());
    assert.match(String(sse.events.at(-1)!.content), /The agent run failed\. \(Error: internal detail/);
  });
});
