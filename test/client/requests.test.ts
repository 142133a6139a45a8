// What the client sends: routes, bodies, query strings, the bearer header, how it picks the agent
// (lazy /info), history paging, and an injected fetch that it uses and leaves open.
import assert from "node:assert/strict";
import { after, afterEach, before, test } from "node:test";
import { Agent, fetch as undiciFetch } from "undici";
import { AgentClient, AgentClientError, type FetchLike, type MessageInput } from "../../src/client/index.ts";
import { waitFor } from "../helpers/raw-http.ts";
import { aiMessage, drain, INFO, sendJson, sseFrame, startScriptedServer, startSse, type ScriptedServer } from "./scripted-server.ts";

let server: ScriptedServer;

before(async () => {
  server = await startScriptedServer({
    "GET /info": (_req, res) => sendJson(res, 200, INFO),
    "POST /chatbot-agent/invoke": (_req, res) => sendJson(res, 200, aiMessage("from chatbot", { thread_id: "new-thread" })),
    "POST /create-agent/invoke": (_req, res) => sendJson(res, 200, aiMessage("from create-agent")),
    "POST /invoke": (_req, res) => sendJson(res, 200, aiMessage("from the default alias")),
  });
});
after(() => server.close());
afterEach(() => {
  server.requests.length = 0;
});

const seen = () => server.requests.map((r) => `${r.method} ${r.path}`);

test("without an agent, the first calls read /info once (shared) and use default_agent", async () => {
  // /info is answered only after its request has arrived, so both calls are made while the read is pending.
  let answerInfo: (() => void) | undefined;
  server.route("GET /info", (_req, res) => {
    answerInfo = () => sendJson(res, 200, INFO);
  });
  const client = new AgentClient({ baseUrl: server.url, authSecret: "s" });
  assert.equal(client.agent, undefined);
  const both = Promise.all([client.invoke("one"), client.invoke("two")]);
  await waitFor(() => answerInfo !== undefined, "the /info request");
  assert.deepEqual(seen(), ["GET /info"]);
  answerInfo?.();
  const [a, b] = await both;
  server.route("GET /info", (_req, res) => sendJson(res, 200, INFO));
  assert.equal(a.content, "from chatbot");
  assert.equal(b.content, "from chatbot");
  assert.equal(client.agent, "chatbot-agent");
  await client.invoke("three");
  assert.deepEqual(seen(), ["GET /info", "POST /chatbot-agent/invoke", "POST /chatbot-agent/invoke", "POST /chatbot-agent/invoke"]);
});

test("a failed /info read is reported and tried again on the next call, not cached", async () => {
  let fail = true;
  server.route("GET /info", (_req, res) => (fail ? sendJson(res, 503, { detail: "starting" }) : sendJson(res, 200, INFO)));
  const client = new AgentClient({ baseUrl: server.url });
  await assert.rejects(client.invoke("x"), (e: unknown) => e instanceof AgentClientError && e.statusCode === 503);
  fail = false;
  assert.equal((await client.invoke("x")).content, "from chatbot");
  assert.deepEqual(seen(), ["GET /info", "GET /info", "POST /chatbot-agent/invoke"]);
});

test("getInfo=false without an agent uses the default-agent routes; an explicit agent needs no /info", async () => {
  const alias = new AgentClient({ baseUrl: server.url, getInfo: false });
  assert.equal((await alias.invoke("x")).content, "from the default alias");
  const named = new AgentClient({ baseUrl: `${server.url}/`, agent: "create-agent" });
  assert.equal((await named.invoke("x")).content, "from create-agent");
  assert.equal((await named.invoke("x", { agent: "chatbot-agent" })).content, "from chatbot");
  assert.deepEqual(seen(), ["POST /invoke", "POST /create-agent/invoke", "POST /chatbot-agent/invoke"]);
});

test("the bearer token comes from authSecret, else from AUTH_SECRET in the environment, else is absent", async () => {
  const saved = process.env.AUTH_SECRET;
  try {
    process.env.AUTH_SECRET = "from-env";
    await new AgentClient({ baseUrl: server.url, agent: "create-agent", authSecret: "explicit" }).invoke("x");
    await new AgentClient({ baseUrl: server.url, agent: "create-agent" }).invoke("x");
    delete process.env.AUTH_SECRET;
    await new AgentClient({ baseUrl: server.url, agent: "create-agent" }).invoke("x");
  } finally {
    if (saved === undefined) delete process.env.AUTH_SECRET;
    else process.env.AUTH_SECRET = saved;
  }
  assert.deepEqual(
    server.requests.map((r) => r.headers.authorization),
    ["Bearer explicit", "Bearer from-env", undefined],
  );
});

test("invoke sends the spec's body: input.message plus top-level identity and model fields only", async () => {
  const client = new AgentClient({ baseUrl: server.url, agent: "create-agent" });
  const controller = new AbortController();
  await client.invoke([{ type: "text", text: "look" }, { type: "image", url: "https://example.test/a.png" }], {
    thread_id: "t-9",
    user_id: "alice",
    model_config_key: "fast",
    agent_config: { temperature: 0 },
    recursion_limit: 5,
    signal: controller.signal,
    agent: "create-agent",
  });
  const request = server.requests[0];
  assert.equal(request?.headers["content-type"], "application/json");
  assert.deepEqual(JSON.parse(request?.body ?? ""), {
    input: { message: [{ type: "text", text: "look" }, { type: "image", url: "https://example.test/a.png" }] },
    thread_id: "t-9",
    user_id: "alice",
    model_config_key: "fast",
    agent_config: { temperature: 0 },
    recursion_limit: 5,
  });
});

test("history: one page with its query, and every page following next_offset", async () => {
  const all = Array.from({ length: 5 }, (_, i) => aiMessage(`m${i}`));
  server.route("GET /bot/history", (req, res) => {
    const limit = Number(req.query.get("limit") ?? 100);
    const offset = Number(req.query.get("offset") ?? 0);
    const next = offset + limit < all.length ? offset + limit : null;
    sendJson(res, 200, { messages: all.slice(offset, offset + limit), total: all.length, next_offset: next });
  });
  const client = new AgentClient({ baseUrl: server.url, agent: "bot" });
  const page = await client.getHistory({ thread_id: "t 1", user_id: "u&v", limit: 2 });
  assert.deepEqual(page.messages.map((m) => m.content), ["m0", "m1"]);
  assert.equal(page.next_offset, 2);
  assert.equal(server.requests[0]?.query.get("thread_id"), "t 1");
  assert.equal(server.requests[0]?.query.get("user_id"), "u&v");
  assert.equal(server.requests[0]?.query.has("offset"), false);

  const pages = [];
  for await (const p of client.historyPages({ thread_id: "t", limit: 2 })) pages.push(p.messages.map((m) => m.content));
  assert.deepEqual(pages, [["m0", "m1"], ["m2", "m3"], ["m4"]]);
  assert.deepEqual(server.requests.slice(1).map((r) => r.query.get("offset")), ["0", "2", "4"]);
});

test("history pages stop with a protocol error when next_offset does not advance", async () => {
  server.route("GET /bot/history", (_req, res) => sendJson(res, 200, { messages: [], total: 9, next_offset: 0 }));
  const client = new AgentClient({ baseUrl: server.url, agent: "bot" });
  const { items, error } = await drain(client.historyPages({ thread_id: "t" }));
  assert.equal(items.length, 1);
  assert.ok(error instanceof AgentClientError && error.kind === "protocol");
});

test("addMessages, clearHistory, createFeedback and resume use their routes and bodies", async () => {
  server.route("POST /bot/history/add_messages", (_req, res) => sendJson(res, 201, { added: 2 }));
  server.route("DELETE /bot/history/clear", (_req, res) => sendJson(res, 200, { cleared: true }));
  server.route("POST /bot/feedback", (_req, res) => {
    res.writeHead(201);
    res.end();
  });
  server.route("POST /bot/resume", (_req, res) => sendJson(res, 200, aiMessage("resumed")));
  const client = new AgentClient({ baseUrl: server.url, agent: "bot" });
  const messages: MessageInput[] = [
    { type: "human", content: "hello" },
    { type: "ai", content: "hi", usage_metadata: null, response_metadata: { finish_reason: "stop" } },
  ];
  assert.deepEqual(await client.addMessages({ thread_id: "t", user_id: "u", messages }), { added: 2 });
  assert.deepEqual(await client.clearHistory({ thread_id: "t" }), { cleared: true });
  assert.deepEqual(
    await client.createFeedback({ run_id: "r", key: "thumbs", score: 1, feedback_token: "proof", comment: "good", source: "test" }),
    {},
  );
  assert.equal((await client.resume({ thread_id: "t", resume: { approved: true }, interrupt_id: "i-1" })).content, "resumed");
  assert.deepEqual(
    server.requests.map((r) => [r.method, r.path, JSON.parse(r.body)]),
    [
      ["POST", "/bot/history/add_messages", { thread_id: "t", user_id: "u", messages }],
      ["DELETE", "/bot/history/clear", { thread_id: "t" }],
      ["POST", "/bot/feedback", { run_id: "r", key: "thumbs", score: 1, feedback_token: "proof", comment: "good", source: "test" }],
      ["POST", "/bot/resume", { thread_id: "t", resume: { approved: true }, interrupt_id: "i-1" }],
    ],
  );
});

test("an injected fetch carries every request and is left open for its owner", async () => {
  const dispatcher = new Agent({ keepAliveTimeout: 10_000 });
  let calls = 0;
  const injected: FetchLike = (input, init) => {
    calls += 1;
    return undiciFetch(input, { ...(init as object), dispatcher }) as unknown as Promise<Response>;
  };
  const realFetch = globalThis.fetch;
  globalThis.fetch = () => Promise.reject(new Error("the global fetch must not be used"));
  try {
    server.route("POST /chatbot-agent/stream", (_req, res) => {
      startSse(res);
      res.end(sseFrame({ type: "token", content: "t" }) + sseFrame("[DONE]"));
    });
    const client = new AgentClient({ baseUrl: server.url, fetch: injected });
    await client.invoke("x");
    const { items, error } = await drain(client.stream("x"));
    assert.equal(error, undefined);
    assert.deepEqual(items, ["t"]);
    assert.equal(calls, 3); // /info, invoke, stream
  } finally {
    globalThis.fetch = realFetch;
  }
  assert.equal(dispatcher.closed, false);
  assert.equal(dispatcher.destroyed, false);
  const again = await undiciFetch(`${server.url}/info`, { dispatcher });
  assert.equal(again.status, 200);
  await again.text();
  await dispatcher.close();
});
