// The client against the real agenthost, started in this process with the fake model: every method
// the service serves, and the failures it really produces (401, 403, 404, 409, 422, 503).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Agent, fetch as undiciFetch } from "undici";
import { storageKey } from "../../src/auth/storage-key.ts";
import { AgentClient, pendingInterrupts, type ChatMessage, type FetchLike, type StreamItem } from "../../src/client/index.ts";
import { failure } from "./scripted-server.ts";
import { startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";

const FAKE = "This is a test response from the fake model.";
const SIGNING_SECRET = "a-feedback-signing-secret-of-32-characters!";

let service: RunningService;
let tokenService: RunningService;

before(async () => {
  [service, tokenService] = await Promise.all([
    startService(),
    startService({
      AUTH_MODE: "token",
      AUTH_USERS: JSON.stringify({ alice: "alice-token", bob: "bob-token" }),
      FEEDBACK_SIGNING_SECRET: SIGNING_SECRET,
    }),
  ]);
});
after(async () => {
  await Promise.all([service?.close(), tokenService?.close()]);
});

const client = (options: Partial<ConstructorParameters<typeof AgentClient>[0]> = {}) =>
  new AgentClient({ baseUrl: service.url, authSecret: TEST_TOKEN, ...options });

async function collect(items: AsyncIterable<StreamItem>): Promise<{ tokens: string[]; messages: ChatMessage[] }> {
  const tokens: string[] = [];
  const messages: ChatMessage[] = [];
  for await (const item of items) {
    if (typeof item === "string") tokens.push(item);
    else messages.push(item);
  }
  return { tokens, messages };
}

describe("runs", () => {
  test("info lists the built-in agents and the default", async () => {
    const info = await client().info();
    const keys = info.agents.map((a) => a.key);
    assert.ok(keys.includes("chatbot-agent") && keys.includes("create-agent"), keys.join());
    assert.equal(info.default_agent, "chatbot-agent");
    assert.ok(info.agents.every((a) => typeof a.description === "string"));
  });

  test("invoke picks the default agent from /info, creates a thread, and continues it", async () => {
    const c = client();
    const first = await c.invoke("Hello");
    assert.equal(c.agent, "chatbot-agent");
    assert.equal(first.type, "ai");
    assert.equal(first.content, FAKE);
    assert.ok(first.thread_id);
    assert.ok(first.run_id);
    assert.equal(first.feedback_token, undefined); // the shared secret in trusted mode needs no proof
    const second = await c.invoke("Again", { thread_id: first.thread_id, agent: "create-agent" });
    assert.equal(second.thread_id, first.thread_id);
    assert.notEqual(second.run_id, first.run_id);
  });

  test("stream (SSE) yields the tokens and then the complete message", async () => {
    const { tokens, messages } = await collect(client({ agent: "create-agent" }).stream("Hi", { thread_id: "sse-1" }));
    assert.ok(tokens.length > 1);
    assert.equal(tokens.join(""), FAKE);
    assert.equal(messages.at(-1)?.content, FAKE);
    assert.equal(messages.at(-1)?.thread_id, "sse-1");
  });

  test("streamJsonl yields the same; stream_tokens=false yields messages only", async () => {
    const withTokens = await collect(client().streamJsonl("Hi"));
    assert.equal(withTokens.tokens.join(""), FAKE);
    assert.equal(withTokens.messages.at(-1)?.content, FAKE);
    const messagesOnly = await collect(client().streamJsonl("Hi", { stream_tokens: false }));
    assert.deepEqual(messagesOnly.tokens, []);
    assert.equal(messagesOnly.messages.at(-1)?.content, FAKE);
  });

  test("getInfo=false uses the default-agent routes without a prefix", async () => {
    const c = client({ getInfo: false });
    assert.equal((await c.invoke("Hi")).content, FAKE);
    assert.equal(c.agent, undefined);
    const { messages } = await collect(c.stream("Hi"));
    assert.equal(messages.at(-1)?.content, FAKE);
  });

  test("an injected fetch carries the calls and is left open", async () => {
    const dispatcher = new Agent();
    let calls = 0;
    const injected: FetchLike = (input, init) => {
      calls += 1;
      return undiciFetch(input, { ...(init as object), dispatcher }) as unknown as Promise<Response>;
    };
    const c = client({ fetch: injected });
    await c.invoke("Hi");
    await collect(c.stream("Hi"));
    assert.equal(calls, 3);
    assert.equal(dispatcher.closed, false);
    const info = await undiciFetch(`${service.url}/info`, { dispatcher, headers: { authorization: `Bearer ${TEST_TOKEN}` } });
    assert.equal(info.status, 200);
    await info.text();
    await dispatcher.close();
  });

  test("an AbortSignal cancels a call against the service", async () => {
    const controller = new AbortController();
    controller.abort(new Error("stop"));
    await assert.rejects(client({ agent: "chatbot-agent" }).invoke("Hi", { signal: controller.signal }), { message: "stop" });
  });
});

describe("failures", () => {
  test("401 for a wrong or missing token", async () => {
    for (const authSecret of ["wrong-token", ""]) {
      const error = await failure(client({ authSecret, agent: "chatbot-agent" }).invoke("Hi"));
      assert.equal(error.statusCode, 401);
      assert.equal(error.kind, "http");
    }
  });

  test("404 for an unknown agent", async () => {
    const error = await failure(client({ agent: "no-such-agent" }).invoke("Hi"));
    assert.equal(error.statusCode, 404);
    assert.match(error.message, /no-such-agent/);
  });

  test("422 validation_failed for identity fields inside agent_config", async () => {
    const error = await failure(client({ agent: "chatbot-agent" }).invoke("Hi", { agent_config: { thread_id: "x" } }));
    assert.equal(error.statusCode, 422);
    assert.equal(error.errorCode, "validation_failed");
  });

  test("409 conversation_busy while another request holds the conversation", async () => {
    const outcome = await service.runtime.locks.acquire(storageKey("service", "chatbot-agent", "busy-thread"));
    assert.ok(outcome.ok);
    try {
      const c = client({ agent: "chatbot-agent" });
      const invoked = await failure(c.invoke("Hi", { thread_id: "busy-thread" }));
      assert.equal(invoked.statusCode, 409);
      assert.equal(invoked.errorCode, "conversation_busy");
      const streamed = await failure(collect(c.stream("Hi", { thread_id: "busy-thread" })));
      assert.equal(streamed.statusCode, 409);
    } finally {
      await outcome.lease.release();
    }
  });

  test("503 service_busy with Retry-After when the worker is full, sent once (no retry)", async () => {
    const held: (() => void)[] = [];
    for (let release = await service.runtime.admission.acquire(); release; release = await service.runtime.admission.acquire()) {
      held.push(release);
    }
    try {
      const error = await failure(collect(client({ agent: "chatbot-agent" }).stream("Hi")));
      assert.equal(error.statusCode, 503);
      assert.equal(error.errorCode, "service_busy");
      assert.equal(error.retryAfter, "1");
    } finally {
      for (const release of held) release();
    }
    assert.equal((await client({ agent: "chatbot-agent" }).invoke("Hi")).content, FAKE);
  });

  test("token mode: runs carry a feedback proof; another user's id is refused with 403", async () => {
    const alice = new AgentClient({ baseUrl: tokenService.url, authSecret: "alice-token" });
    const invoked = await alice.invoke("Hi");
    assert.equal(typeof invoked.feedback_token, "string");
    const { messages } = await collect(alice.stream("Hi", { thread_id: invoked.thread_id }));
    assert.equal(typeof messages.at(-1)?.feedback_token, "string");
    const error = await failure(alice.invoke("Hi", { user_id: "bob" }));
    assert.equal(error.statusCode, 403);
  });
});

describe("history and feedback", () => {
  test("getHistory and historyPages read a conversation page by page", async () => {
    const c = client({ agent: "chatbot-agent" });
    const { thread_id } = await c.invoke("First question");
    await c.invoke("Second question", { thread_id });
    const page = await c.getHistory({ thread_id });
    assert.equal(page.total, 4);
    assert.equal(page.next_offset, null);
    assert.deepEqual(page.messages.map((m) => m.type), ["human", "ai", "human", "ai"]);
    assert.equal(page.messages[0]?.content, "First question");
    const pages = [];
    for await (const p of c.historyPages({ thread_id, limit: 3 })) pages.push(p.messages.length);
    assert.deepEqual(pages, [3, 1]);
  });

  test("addMessages appends without a run; clearHistory empties the conversation", async () => {
    const c = client({ agent: "chatbot-agent" });
    const thread_id = `imported-${Date.now()}`;
    await c.addMessages({
      thread_id,
      messages: [
        { type: "human", content: "imported question" },
        { type: "ai", content: "imported answer" },
      ],
    });
    const page = await c.getHistory({ thread_id });
    assert.deepEqual(page.messages.map((m) => m.content), ["imported question", "imported answer"]);
    await c.clearHistory({ thread_id });
    assert.equal((await c.getHistory({ thread_id })).total, 0);
  });

  test("createFeedback: the shared secret needs no proof; a token user needs the run's proof", async () => {
    const trusted = client({ agent: "chatbot-agent" });
    const run = await trusted.invoke("Hi");
    assert.ok(run.run_id);
    await trusted.createFeedback({ run_id: run.run_id, key: "thumbs", score: 1 });

    const alice = new AgentClient({ baseUrl: tokenService.url, authSecret: "alice-token", agent: "chatbot-agent" });
    const aliceRun = await alice.invoke("Hi");
    assert.ok(aliceRun.run_id && aliceRun.feedback_token);
    const missing = await failure(alice.createFeedback({ run_id: aliceRun.run_id, key: "thumbs", score: 0 }));
    assert.equal(missing.statusCode, 403);
    await alice.createFeedback({ run_id: aliceRun.run_id, key: "thumbs", score: 0, feedback_token: aliceRun.feedback_token });
  });
});

describe("interrupts", () => {
  const INTERRUPTS = new URL("../fixtures/interrupt-agents.ts", import.meta.url).pathname;
  let paused: RunningService;
  before(async () => {
    paused = await startService({ AGENT_PATHS: JSON.stringify([`${INTERRUPTS}:askName`, `${INTERRUPTS}:twoQuestions`]) });
  });
  after(async () => paused?.close());

  test("pendingInterrupts reads a paused run; the next invoke or resume answers it", async () => {
    const c = new AgentClient({ baseUrl: paused.url, authSecret: TEST_TOKEN, agent: "ask-name" });
    const question = await c.invoke("Hi", { thread_id: "by-next-run" });
    assert.equal(question.type, "ai");
    assert.equal(question.content, "What is your name?");
    const [pending] = pendingInterrupts(question);
    assert.equal(pending?.value, "What is your name?");
    assert.equal((await c.invoke("Ada", { thread_id: "by-next-run" })).content, "Hello, Ada!");

    const { messages } = await collect(c.stream("Hi", { thread_id: "by-resume" }));
    const streamed = pendingInterrupts(messages.at(-1)!);
    assert.equal(streamed.length, 1);
    const done = await c.resume({ thread_id: "by-resume", resume: "Grace", interrupt_id: streamed[0]!.id });
    assert.equal(done.content, "Hello, Grace!");
    assert.deepEqual(pendingInterrupts(done), []);
  });

  test("the run option resume answers the named question only; the other stays pending", async () => {
    const c = new AgentClient({ baseUrl: paused.url, authSecret: TEST_TOKEN, agent: "two-questions" });
    const [colour, number] = pendingInterrupts(await c.invoke("Ask me", { thread_id: "keyed" }));
    assert.deepEqual([colour?.value, number?.value], [{ question: "Favourite colour?" }, { question: "Favourite number?" }]);
    const { messages } = await collect(c.stream("blue", { thread_id: "keyed", resume: { [colour!.id]: "blue" } }));
    assert.equal(messages.at(-2)?.content, "Colour: blue");
    assert.deepEqual(pendingInterrupts(messages.at(-1)!), [number]);
    const done = await c.invoke("7", { thread_id: "keyed", resume: { [number!.id]: "7" } });
    assert.equal(done.content, "Number: 7");
    const history = await c.getHistory({ thread_id: "keyed" });
    assert.deepEqual(history.messages.map((m) => m.content), ["Ask me", "Colour: blue", "Number: 7"]);
  });
});
