// The original Python AgentClient (release 0.10.0) against the real service on SQLite: every request
// body here is byte for byte what that client puts on the wire (../shared/spec/compat-0.10.md), and
// every answer is checked the way that client parses it. Trusted and token mode, invoke, SSE and
// JSON Lines, history, feedback, and the resume-by-next-message journey.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { storageKey } from "../../src/auth/storage-key.ts";
import { call, startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";
import { parseEvents, type Protocol } from "../fixtures/providers/events.ts";
import { fakeLangfuse, type FakeBackend } from "../integration/observability-fakes.ts";

const ROOT = path.resolve(import.meta.dirname, "../..");
const INTERRUPTS = path.join(ROOT, "test/fixtures/interrupt-agents.ts");
const DEEP = path.join(ROOT, "test/fixtures/deep-agent-scripted.ts");
const FAKE = "This is a test response from the fake model.";
const SIGNING = "feedback-signing-secret-0123456789abcdef";
const ALICE = "alice-token-0123456789";
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

// ---- What the client sends ----------------------------------------------------------------------

/** The invoke body: pydantic's dump, every unset optional field null, agent_config always {}. */
function invokeBody(message: unknown, fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    input: { message },
    model_name: null,
    model_provider: null,
    model_config_key: null,
    thread_id: null,
    user_id: null,
    agent_config: {},
    recursion_limit: null,
    ...fields,
  };
}

/** A message of an append, with every MessageInput field the client always sends. */
function messageInput(type: string, content: unknown, fields: Record<string, unknown> = {}): Record<string, unknown> {
  return { type, content, custom_data: null, tool_call_id: null, tool_calls: [], usage_metadata: null, response_metadata: {}, ...fields };
}

const ROUTES: Record<Protocol, string> = { invoke: "invoke", sse: "stream", jsonl: "stream/jsonl" };

// ---- How the client reads answers ---------------------------------------------------------------

type ChatMessage = {
  type: "human" | "ai" | "tool" | "custom";
  content: string | Array<Record<string, unknown>>;
  thread_id: string;
  run_id: string | null;
  tool_calls: Array<{ id: string | null; name: string; args: Record<string, unknown> }>;
  custom_data?: { interrupts?: Array<{ id: string; value: unknown }> } & Record<string, unknown>;
  tool_call_id?: string;
  feedback_token?: string;
  usage_metadata: Record<string, number> | null;
  response_metadata: Record<string, unknown>;
};

/** The client's ChatMessage validation: its four types, and every tool call has the key `id`. */
function parsedByClient(value: unknown): ChatMessage {
  const message = value as ChatMessage;
  assert.ok(["human", "ai", "tool", "custom"].includes(message.type), `the client rejects type ${JSON.stringify(message.type)}`);
  assert.ok(typeof message.content === "string" || Array.isArray(message.content));
  for (const toolCall of message.tool_calls ?? []) {
    assert.ok("id" in toolCall, "a tool call without the key id fails the client's validation");
    assert.equal(typeof toolCall.name, "string");
  }
  if (message.custom_data !== undefined) assert.equal(typeof message.custom_data, "object");
  return message;
}

interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown> | undefined;
  /** A run's messages in order (invoke: the one answer). */
  messages: ChatMessage[];
  tokens: string[];
}

async function send(service: RunningService, method: string, pathname: string, body?: unknown, token: string | null = TEST_TOKEN): Promise<Answer> {
  const response = await call(service, method, pathname, body, token);
  const text = await response.text();
  const parsed = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
  return { status: response.status, headers: response.headers, body: parsed, messages: [], tokens: [] };
}

/** One run the way the client makes it: invoke, stream or stream_jsonl (agent "" is the default agent). */
async function runAs(
  service: RunningService,
  protocol: Protocol,
  agent: string,
  body: Record<string, unknown>,
  token: string | null = TEST_TOKEN,
): Promise<Answer> {
  const sent = protocol === "invoke" ? body : { ...body, stream_tokens: body.stream_tokens ?? true };
  const prefix = agent ? `/${agent}` : "";
  const response = await call(service, "POST", `${prefix}/${ROUTES[protocol]}`, sent, token);
  const text = await response.text();
  if (response.status !== 200 || protocol === "invoke") {
    const parsed = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
    const messages = response.status === 200 ? [parsedByClient(parsed)] : [];
    return { status: response.status, headers: response.headers, body: parsed, messages, tokens: [] };
  }
  const { events, done } = parseEvents(protocol, text);
  if (protocol === "sse") assert.ok(done, "the client raises when an SSE stream ends without [DONE]");
  const errors = events.filter((e) => e.type === "error");
  assert.deepEqual(errors, [], "the client raises AgentClientError on an error event");
  return {
    status: 200,
    headers: response.headers,
    body: undefined,
    messages: events.filter((e) => e.type === "message").map((e) => parsedByClient(e.content)),
    tokens: events.filter((e) => e.type === "token").map((e) => String(e.content)),
  };
}

const last = (answer: Answer): ChatMessage => {
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.messages.at(-1)!;
};

const pendingOf = (message: ChatMessage) => message.custom_data?.interrupts ?? [];

function sqliteFile(): { file: string; remove: () => void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agenthost-compat-"));
  return { file: path.join(dir, "checkpoints.sqlite"), remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

describe("the 0.10.0 Python client, trusted mode, SQLite", { concurrency: false }, () => {
  let service: RunningService;
  let langfuse: FakeBackend;
  let db: ReturnType<typeof sqliteFile>;

  before(async () => {
    db = sqliteFile();
    langfuse = await fakeLangfuse();
    service = await startService({
      MEMORY_BACKEND: "filedb",
      FILEDB_DB_PATH: db.file,
      AGENT_PATHS: JSON.stringify([`${INTERRUPTS}:askName`, `${INTERRUPTS}:twoQuestions`, `${DEEP}:scriptedDeepAgent`]),
      DEEP_AGENT_INTERRUPT_ON: "write_file,edit_file",
      CHECK_INTERRUPTS: "true",
      HISTORY_MAX_PAGE_SIZE: "50",
      OBSERVABILITY_BACKEND: "langfuse",
      LANGFUSE_PUBLIC_KEY: "pk-lf-test",
      LANGFUSE_SECRET_KEY: "sk-lf-test",
      LANGFUSE_BASE_URL: langfuse.url,
    });
  });
  after(async () => {
    await service?.close();
    await langfuse?.close();
    db?.remove();
  });

  for (const protocol of ["invoke", "sse", "jsonl"] as const) {
    test(`${protocol}: the client's body with every unset field null runs, on the prefixed and the default route`, async () => {
      for (const agent of ["chatbot-agent", ""]) {
        const fresh = await runAs(service, protocol, agent, invokeBody("hi"));
        const answer = last(fresh);
        assert.equal(answer.type, "ai");
        assert.equal(answer.content, FAKE);
        assert.ok(answer.thread_id, "a new conversation's id comes back");
        const streamOnly = protocol === "invoke" ? {} : { stream_tokens: false };
        const again = last(await runAs(service, protocol, agent, invokeBody("and again", { thread_id: answer.thread_id, user_id: "ann", ...streamOnly })));
        assert.equal(again.thread_id, answer.thread_id);
      }
    });
  }

  test("stream_tokens true yields tokens; false yields complete messages only", async () => {
    const withTokens = await runAs(service, "sse", "chatbot-agent", invokeBody("hi", { stream_tokens: true }));
    assert.equal(withTokens.tokens.join(""), FAKE);
    const without = await runAs(service, "jsonl", "chatbot-agent", invokeBody("hi", { stream_tokens: false }));
    assert.deepEqual(without.tokens, []);
    assert.equal(last(without).content, FAKE);
  });

  test("a required field sent as null is still a 422 that names it", async () => {
    const cases: Array<[string, string, unknown, RegExp]> = [
      ["POST", "/chatbot-agent/invoke", { ...invokeBody("x"), input: null }, /^input: /],
      ["POST", "/chatbot-agent/stream", { ...invokeBody("x"), input: { message: null }, stream_tokens: true }, /^input\.message: /],
      ["POST", "/chatbot-agent/history/add_messages", { thread_id: null, user_id: null, messages: [messageInput("human", "x")] }, /^thread_id: /],
      ["DELETE", "/chatbot-agent/history/clear", { thread_id: null, user_id: null }, /^thread_id: /],
      ["POST", "/chatbot-agent/feedback", { run_id: null, key: "k", score: 1, kwargs: {}, user_id: null, feedback_token: null }, /^run_id: /],
      ["POST", "/chatbot-agent/feedback", { run_id: "r", key: "k", score: null, kwargs: {}, user_id: null, feedback_token: null }, /^score: /],
    ];
    for (const [method, pathname, body, detail] of cases) {
      const answer = await send(service, method, pathname, body);
      assert.equal(answer.status, 422, `${pathname} ${JSON.stringify(body)}`);
      assert.equal(answer.body?.error_code, "validation_failed");
      assert.match(String(answer.body?.detail), detail);
    }
  });

  test("history: the client's full MessageInput shape appends; reading back gives what the client parses", async () => {
    const thread = "imported";
    const messages = [
      messageInput("human", "What is 2 + 3?"),
      messageInput("ai", "", { tool_calls: [{ name: "add", args: { a: 2, b: 3 }, id: "call_add", type: "tool_call" }], response_metadata: { finish_reason: "tool_calls" } }),
      messageInput("tool", "5", { tool_call_id: "call_add" }),
      messageInput("custom", "", { custom_data: { task: "sum", status: "done" } }),
      messageInput("ai", "It is 5.", { usage_metadata: { input_tokens: 9, output_tokens: 4, total_tokens: 13 } }),
    ];
    const added = await send(service, "POST", "/chatbot-agent/history/add_messages", { thread_id: thread, user_id: null, messages });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    assert.equal(added.body?.status, "success");
    assert.equal(added.body?.thread_id, thread);
    assert.equal(added.body?.user_id, null);
    assert.equal(added.body?.message, "Added 5 messages to chat history.");

    const page = await send(service, "GET", `/chatbot-agent/history?thread_id=${thread}&offset=0&limit=100`);
    assert.equal(page.status, 200);
    const read = (page.body!.messages as unknown[]).map(parsedByClient);
    assert.deepEqual(read.map((m) => m.type), ["human", "ai", "tool", "custom", "ai"]);
    assert.deepEqual(read[1]!.tool_calls, [{ id: "call_add", name: "add", args: { a: 2, b: 3 }, type: "tool_call" }]);
    assert.equal(read[2]!.tool_call_id, "call_add");
    assert.deepEqual(read[3]!.custom_data, { task: "sum", status: "done" });
    assert.deepEqual(read[4]!.usage_metadata, { input_tokens: 9, output_tokens: 4, total_tokens: 13 });
    assert.equal(page.body!.total, 5);
    assert.equal(page.body!.next_offset, null);

    // The agent continues the imported conversation (tool call, its answer and a custom entry included).
    const next = last(await runAs(service, "invoke", "chatbot-agent", invokeBody("Thanks", { thread_id: thread })));
    assert.equal(next.content, FAKE);

    const system = await send(service, "POST", "/chatbot-agent/history/add_messages", {
      thread_id: thread,
      user_id: null,
      messages: [messageInput("system", "You are terse.")],
    });
    assert.equal(system.status, 422);
    assert.match(String(system.body?.detail), /system messages cannot be imported/);
  });

  test("history: a limit above HISTORY_MAX_PAGE_SIZE is capped; an empty user_id counts as omitted", async () => {
    const messages = Array.from({ length: 60 }, (_, i) => messageInput(i % 2 ? "ai" : "human", `m${i}`));
    const added = await send(service, "POST", "/history/add_messages", { thread_id: "long", user_id: "", messages });
    assert.equal(added.status, 201);
    assert.equal(added.body?.user_id, "", "user_id is echoed as sent");
    const page = await send(service, "GET", "/history?thread_id=long&offset=0&limit=100");
    assert.equal(page.status, 200);
    assert.equal((page.body!.messages as unknown[]).length, 50);
    assert.equal(page.body!.total, 60);
    assert.equal(page.body!.next_offset, 50);
    const same = await send(service, "GET", "/history?thread_id=long&user_id=&offset=50&limit=100");
    assert.equal((same.body!.messages as unknown[]).length, 10, "the empty user_id read the service user's conversation");
    const run = last(await runAs(service, "invoke", "chatbot-agent", invokeBody("hi", { thread_id: "long", user_id: "" })));
    assert.equal(run.content, FAKE);
    assert.equal((await send(service, "GET", "/history?thread_id=long&limit=1")).body!.total, 62);
  });

  test("history clear answers the original's fields and echoes user_id as sent", async () => {
    for (const user_id of [null, "bob"]) {
      await send(service, "POST", "/chatbot-agent/history/add_messages", { thread_id: "to-clear", user_id, messages: [messageInput("human", "x")] });
      const cleared = await send(service, "DELETE", "/chatbot-agent/history/clear", { thread_id: "to-clear", user_id });
      assert.equal(cleared.status, 200);
      assert.deepEqual(
        { status: cleared.body?.status, thread_id: cleared.body?.thread_id, user_id: cleared.body?.user_id, message: cleared.body?.message },
        { status: "success", thread_id: "to-clear", user_id, message: "Deleted all checkpoints for this conversation." },
      );
      const query = user_id ? `&user_id=${user_id}` : "";
      assert.equal((await send(service, "GET", `/chatbot-agent/history?thread_id=to-clear${query}&offset=0&limit=100`)).body!.total, 0);
    }
  });

  for (const protocol of ["invoke", "sse", "jsonl"] as const) {
    test(`${protocol}: a paused run answers an ai message with custom_data.interrupts; the next run resumes it with the whole input`, async () => {
      const thread = `pause-${protocol}`;
      const paused = await runAs(service, protocol, "ask-name", invokeBody("Hi", { thread_id: thread }));
      const question = last(paused);
      assert.equal(question.type, "ai");
      assert.equal(question.content, "What is your name?");
      const pending = pendingOf(question);
      assert.equal(pending.length, 1);
      assert.equal(pending[0]!.value, "What is your name?");
      assert.match(pending[0]!.id, /^[0-9a-f]{32}$/);

      const resumed = last(await runAs(service, protocol, "ask-name", invokeBody("Bob", { thread_id: thread })));
      assert.equal(resumed.content, "Hello, Bob!", "the plain interrupt received the input object {message: 'Bob'}");
      assert.equal(resumed.custom_data, undefined);
      // The answer was not added as a new human turn.
      const history = await send(service, "GET", `/ask-name/history?thread_id=${thread}&offset=0&limit=100`);
      assert.deepEqual((history.body!.messages as ChatMessage[]).map((m) => [m.type, m.content]), [["human", "Hi"], ["ai", "Hello, Bob!"]]);
    });
  }

  test("elicitation answers: input.resume keyed by interrupt id, then input.responses for the one left", async () => {
    const thread = "elicit";
    const paused = last(await runAs(service, "invoke", "two-questions", invokeBody("Hi", { thread_id: thread })));
    const pending = pendingOf(paused);
    assert.equal(pending.length, 2);
    assert.deepEqual(String(paused.content).split("\n\n").sort(), ["Favourite colour?", "Favourite number?"]);
    const colour = pending.find((p) => (p.value as { question: string }).question === "Favourite colour?")!;

    const first = last(await runAs(service, "invoke", "two-questions", { ...invokeBody(""), thread_id: thread, input: { message: "", resume: { [colour.id]: "green" } } }));
    assert.equal(first.content, "Favourite number?");
    assert.equal(pendingOf(first).length, 1);

    const second = last(await runAs(service, "sse", "two-questions", { ...invokeBody(""), thread_id: thread, input: { message: "", responses: 7 } }));
    assert.equal(pendingOf(second).length, 0);
    const key = storageKey("service", "two-questions", thread);
    const state = await service.runtime.registry.get("two-questions")!.graph.getState({ configurable: { thread_id: key } });
    const texts = (state.values as { messages: Array<{ text: string }> }).messages.map((m) => m.text);
    assert.ok(texts.includes("Colour: green") && texts.includes("Number: 7"), texts.join(" | "));
  });

  test("deep agent: approvals answered by the next message ('approve', then 'reject: reason'); tool calls carry id", async () => {
    const thread = "approvals";
    const first = last(await runAs(service, "invoke", "scripted-deep-agent", invokeBody("Note it.", { thread_id: thread })));
    assert.equal(first.content, "Approval needed before running write_file.");
    const request = pendingOf(first)[0]!.value as { actionRequests: Array<{ name: string }> };
    assert.equal(request.actionRequests[0]!.name, "write_file");

    const approved = await runAs(service, "sse", "scripted-deep-agent", invokeBody("approve", { thread_id: thread, stream_tokens: false }));
    const calls = approved.messages.flatMap((m) => m.tool_calls);
    assert.ok(calls.length > 0 && calls.every((c) => "id" in c));
    const second = last(approved);
    assert.equal(second.content, "Approval needed before running edit_file.");

    const rejected = await runAs(service, "jsonl", "scripted-deep-agent", invokeBody("Reject: keep the note as it is", { thread_id: thread, stream_tokens: false }));
    const final = last(rejected);
    assert.equal(final.type, "ai");
    assert.equal(final.custom_data, undefined);
    const toolAnswers = rejected.messages.filter((m) => m.type === "tool").map((m) => m.content);
    assert.ok(toolAnswers.includes("keep the note as it is"), JSON.stringify(toolAnswers));

    const key = storageKey("service", "scripted-deep-agent", thread);
    const state = await service.runtime.registry.get("scripted-deep-agent")!.graph.getState({ configurable: { thread_id: key } });
    const file = (state.values as { files: Record<string, { content: unknown }> }).files["/notes.md"];
    assert.match(JSON.stringify(file?.content), /hello world/, "the approved write happened; the rejected edit did not");
  });

  test("content blocks: base64 (data as its alias) and url sources for image, file, audio and video", async () => {
    const blocks = [
      { type: "text", text: "Look" },
      { type: "image", base64: PNG, mime_type: "image/png" },
      { type: "image", data: PNG, mime_type: "image/png" },
      { type: "image", url: "https://example.invalid/cat.png", mime_type: null },
      { type: "file", url: "https://example.invalid/report.pdf", mime_type: "application/pdf" },
      { type: "audio", url: "https://example.invalid/a.mp3" },
      { type: "video", base64: "AAAA", mime_type: "video/mp4" },
    ];
    const answer = last(await runAs(service, "invoke", "chatbot-agent", invokeBody(blocks, { thread_id: "blocks" })));
    assert.equal(answer.content, FAKE);
    const page = await send(service, "GET", "/chatbot-agent/history?thread_id=blocks&offset=0&limit=100");
    const stored = (page.body!.messages as ChatMessage[])[0]!.content as Array<Record<string, unknown>>;
    assert.deepEqual(stored[1], { type: "image", base64: PNG, mime_type: "image/png" });
    assert.deepEqual(stored[2], { type: "image", base64: PNG, mime_type: "image/png" });
    assert.deepEqual(stored[4], { type: "file", url: "https://example.invalid/report.pdf", mime_type: "application/pdf", filename: "attachment" });

    const noMime = await runAs(service, "invoke", "chatbot-agent", invokeBody([{ type: "audio", base64: "AAAA" }]));
    assert.equal(noMime.status, 422);
    assert.match(String(noMime.body?.detail), /needs mime_type/);
  });

  test("model_provider alone selects that provider's default model (fake)", async () => {
    const answer = last(await runAs(service, "invoke", "chatbot-agent", invokeBody("hi", { model_provider: "fake" })));
    assert.equal(answer.content, FAKE);
  });

  test("feedback: kwargs are unpacked (comment, metadata); run_id is any string; identity keys in kwargs are 422", async () => {
    const body = { run_id: "run-from-the-python-client", key: "human-feedback-stars", score: 0.8, kwargs: { comment: "Great answer", channel: "slack" }, user_id: null, feedback_token: null };
    const answer = await send(service, "POST", "/chatbot-agent/feedback", body);
    assert.equal(answer.status, 201, JSON.stringify(answer.body));
    const score = langfuse
      .to("/api/public/scores")
      .map((r) => JSON.parse(r.body.toString("utf8")) as Record<string, unknown>)
      .find((s) => s.id === answer.body?.feedback_id);
    assert.ok(score, "the score reached the backend");
    assert.equal(score.comment, "Great answer");
    assert.equal(score.value, 0.8);
    assert.deepEqual(score.metadata, { channel: "slack", agent_id: "chatbot-agent", user_id: "service", run_id: "run-from-the-python-client" });

    for (const name of ["run_id", "user_id", "trace_id", "observation_id", "id"]) {
      const refused = await send(service, "POST", "/feedback", { ...body, kwargs: { comment: "x", [name]: "evil" } });
      assert.equal(refused.status, 422, name);
      assert.match(String(refused.body?.detail), /Feedback kwargs cannot override the feedback target or identity/);
    }
  });

  test("every 401 carries WWW-Authenticate: Bearer", async () => {
    const requests: Array<[string, string, unknown]> = [
      ["POST", "/chatbot-agent/invoke", invokeBody("hi")],
      ["POST", "/stream", { ...invokeBody("hi"), stream_tokens: true }],
      ["GET", "/chatbot-agent/history?thread_id=t&offset=0&limit=100", undefined],
      ["GET", "/info", undefined],
      ["DELETE", "/history/clear", { thread_id: "t", user_id: null }],
    ];
    for (const token of [null, "wrong-token"]) {
      for (const [method, pathname, body] of requests) {
        const answer = await send(service, method, pathname, body, token);
        assert.equal(answer.status, 401, pathname);
        assert.equal(answer.headers.get("www-authenticate"), "Bearer", pathname);
      }
    }
  });

  test("409 conversation_busy carries Retry-After: 1, before any stream header", async () => {
    const held = await service.runtime.locks.acquire(storageKey("service", "chatbot-agent", "busy"));
    assert.ok(held.ok);
    try {
      for (const protocol of ["invoke", "sse", "jsonl"] as const) {
        const answer = await runAs(service, protocol, "chatbot-agent", invokeBody("hi", { thread_id: "busy" }));
        assert.equal(answer.status, 409, protocol);
        assert.equal(answer.body?.error_code, "conversation_busy");
        assert.equal(answer.headers.get("retry-after"), "1");
      }
    } finally {
      await held.lease.release();
    }
  });
});

describe("the 0.10.0 Python client, token mode, SQLite", { concurrency: false }, () => {
  let service: RunningService;
  let db: ReturnType<typeof sqliteFile>;

  before(async () => {
    db = sqliteFile();
    service = await startService({
      MEMORY_BACKEND: "filedb",
      FILEDB_DB_PATH: db.file,
      AUTH_MODE: "token",
      AUTH_USERS: JSON.stringify({ alice: ALICE }),
      FEEDBACK_SIGNING_SECRET: SIGNING,
      AGENT_PATHS: JSON.stringify([`${INTERRUPTS}:askName`, `${DEEP}:scriptedDeepAgent`]),
      DEEP_AGENT_INTERRUPT_ON: "write_file",
    });
  });
  after(async () => {
    await service?.close();
    db?.remove();
  });

  for (const protocol of ["invoke", "sse", "jsonl"] as const) {
    test(`${protocol}: a user's run with null fields carries a proof; feedback with the client's body and that proof is accepted`, async () => {
      const answer = last(await runAs(service, protocol, "chatbot-agent", invokeBody("hi", { thread_id: `fb-${protocol}` }), ALICE));
      assert.ok(answer.feedback_token && answer.run_id);
      const feedback = { run_id: answer.run_id, key: "thumbs", score: 1, kwargs: { comment: "good" }, user_id: null, feedback_token: answer.feedback_token };
      const accepted = await send(service, "POST", "/chatbot-agent/feedback", feedback, ALICE);
      assert.equal(accepted.status, 201, JSON.stringify(accepted.body));
      const withoutProof = await send(service, "POST", "/chatbot-agent/feedback", { ...feedback, feedback_token: null }, ALICE);
      assert.equal(withoutProof.status, 403);
      assert.equal(withoutProof.body?.error_code, "feedback_proof_required");
    });
  }

  test("history add, read and clear with user_id null act for the token's own user", async () => {
    const added = await send(service, "POST", "/chatbot-agent/history/add_messages", { thread_id: "mine", user_id: null, messages: [messageInput("human", "hello")] }, ALICE);
    assert.equal(added.status, 201);
    const page = await send(service, "GET", "/chatbot-agent/history?thread_id=mine&offset=0&limit=100", undefined, ALICE);
    assert.equal(page.body!.total, 1);
    assert.equal((await send(service, "GET", "/chatbot-agent/history?thread_id=mine&offset=0&limit=100")).body!.total, 0, "another identity sees its own conversation");
    const other = await send(service, "POST", "/chatbot-agent/history/add_messages", { thread_id: "mine", user_id: "bob", messages: [messageInput("human", "x")] }, ALICE);
    assert.equal(other.status, 403);
    const cleared = await send(service, "DELETE", "/chatbot-agent/history/clear", { thread_id: "mine", user_id: null }, ALICE);
    assert.equal(cleared.body?.status, "success");
    assert.equal((await send(service, "GET", "/chatbot-agent/history?thread_id=mine&offset=0&limit=100", undefined, ALICE)).body!.total, 0);
  });

  test("a user resumes a paused run with the next message; the deep agent's approval by 'approve'", async () => {
    const paused = last(await runAs(service, "jsonl", "ask-name", invokeBody("Hi", { thread_id: "t-user" }), ALICE));
    assert.equal(pendingOf(paused).length, 1);
    assert.ok(paused.feedback_token, "a paused run's answer carries the run's proof");
    assert.equal(last(await runAs(service, "invoke", "ask-name", invokeBody("Alice", { thread_id: "t-user" }), ALICE)).content, "Hello, Alice!");

    const approval = last(await runAs(service, "invoke", "scripted-deep-agent", invokeBody("Note it.", { thread_id: "t-approve" }), ALICE));
    assert.equal(approval.content, "Approval needed before running write_file.");
    const done = last(await runAs(service, "invoke", "scripted-deep-agent", invokeBody("yes", { thread_id: "t-approve" }), ALICE));
    assert.equal(done.type, "ai");
    assert.equal(done.custom_data, undefined);
    assert.equal(done.content, "Done: the note says hello there.");
  });
});
