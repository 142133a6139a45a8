// The chat page's server over HTTP, in front of a scripted agenthost: what it forwards (token, user
// id, thread), what it gives the browser (no token, user id or proof), how failures reach the
// browser, and the checks that keep other sites from using its token.
import assert from "node:assert/strict";
import { request, type IncomingHttpHeaders } from "node:http";
import { after, afterEach, before, test } from "node:test";
import { AllowedHosts, parseHost } from "../../src/ui/allowed-hosts.ts";
import { FeedbackTokens } from "../../src/ui/feedback-tokens.ts";
import { startChatServer } from "../../src/ui/server.ts";
import { RawClient, waitFor } from "../helpers/raw-http.ts";
import { aiMessage, INFO, sendJson, sseFrame, startScriptedServer, startSse, type ScriptedServer } from "../client/scripted-server.ts";

const TOKEN = "page-token-5e1f";
const USER = "page-user-77";

let upstream: ScriptedServer;
let page: { url: string; close(): Promise<void> };

before(async () => {
  upstream = await startScriptedServer({ "GET /info": (_req, res) => sendJson(res, 200, INFO) });
  page = await startChatServer({ agenthostUrl: upstream.url, authSecret: TOKEN, userId: USER, host: "127.0.0.1", port: 0 }, { reconnectGraceMs: 0 });
});
after(async () => {
  await page.close();
  await upstream.close();
});
afterEach(() => {
  upstream.requests.length = 0;
});

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(page.url + path, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

async function chatEvents(body: unknown): Promise<Record<string, unknown>[]> {
  const response = await post("/api/chat", body);
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type") ?? "", /^application\/x-ndjson/);
  const text = await response.text();
  assert.ok(!text.includes(TOKEN) && !text.includes(USER));
  return text.trim().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** Events without their sequence numbers and stream id (checked on their own). */
function plain(events: Record<string, unknown>[]): Record<string, unknown>[] {
  return events.map(({ seq: _seq, stream_id: _stream, ...rest }) => rest);
}

test("serves the page and its scripts with a strict content security policy", async () => {
  for (const [path, type] of [
    ["/", "text/html"],
    ["/app.js", "text/javascript"],
    ["/markdown.js", "text/javascript"],
    ["/style.css", "text/css"],
    ["/favicon.svg", "image/svg\\+xml"],
    ["/favicon.ico", "image/svg\\+xml"],
  ]) {
    const response = await fetch(page.url + path);
    assert.equal(response.status, 200, path);
    assert.match(response.headers.get("content-type") ?? "", new RegExp(`^${type}`));
    assert.match(response.headers.get("content-security-policy") ?? "", /script-src 'self'/);
    assert.equal(response.headers.get("x-content-type-options"), "nosniff");
    const text = await response.text();
    assert.ok(!text.includes(TOKEN) && !text.includes(USER));
  }
  assert.equal((await fetch(`${page.url}/../src/ui/server.ts`)).status, 404);
  assert.equal((await fetch(`${page.url}/index.html`)).status, 404);
});

test("/api/agents lists the agents from /info, fetched with the page's token", async () => {
  const response = await fetch(`${page.url}/api/agents`);
  // With the attachment limits the page enforces (the defaults here).
  assert.deepEqual(await response.json(), { ...INFO, limits: { max_attachments: 10, max_upload_bytes: 10 * 1024 * 1024 } });
  assert.equal(upstream.requests[0]?.headers.authorization, `Bearer ${TOKEN}`);
});

test("attachments per message are agenthost's (from its /info); the page's own setting only lowers them", async () => {
  const block = { type: "file", base64: "aGk=", mime_type: "text/plain" };
  const tooMany = async (url: string, count: number) => {
    const response = await fetch(`${url}/api/chat`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ agent: "chatbot-agent", message: "", attachments: Array.from({ length: count }, () => block) }),
    });
    assert.equal(response.status, 413);
    return ((await response.json()) as { error: { message: string } }).error.message;
  };
  upstream.route("GET /info", (_req, res) => sendJson(res, 200, { ...INFO, limits: { max_attachments: 3 } }));
  const own = await startChatServer({ agenthostUrl: upstream.url, authSecret: TOKEN, userId: USER, host: "127.0.0.1", port: 0, maxAttachments: 2 });
  try {
    const limits = async (url: string) => ((await (await fetch(`${url}/api/agents`)).json()) as { limits: unknown }).limits;
    assert.deepEqual(await limits(page.url), { max_attachments: 3, max_upload_bytes: 10 * 1024 * 1024 });
    assert.equal(await tooMany(page.url, 4), "at most 3 attachments per message");
    assert.deepEqual(await limits(own.url), { max_attachments: 2, max_upload_bytes: 10 * 1024 * 1024 });
    assert.equal(await tooMany(own.url, 3), "at most 2 attachments per message");
  } finally {
    upstream.route("GET /info", (_req, res) => sendJson(res, 200, INFO));
    await own.close();
  }
});

test("/api/chat streams tokens and trimmed messages; the proof stays on the server", async () => {
  upstream.route("POST /create-agent/stream", (_req, res) => {
    startSse(res);
    res.write(sseFrame({ type: "token", content: "Hel" }));
    res.write(sseFrame({ type: "token", content: "lo" }));
    res.write(sseFrame({ type: "message", content: aiMessage("Hello", { feedback_token: "proof-1", usage_metadata: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } }) }));
    res.end(sseFrame("[DONE]"));
  });
  const numbered = await chatEvents({ agent: "create-agent", message: "Hi there" });
  assert.deepEqual(numbered.map((e) => e.seq), [1, 2, 3, 4, 5]);
  assert.match(String(numbered[0]?.stream_id), /^[0-9a-f-]{36}$/);
  const events = plain(numbered);
  const thread = events[0];
  assert.equal(thread?.type, "thread");
  assert.match(String(thread?.thread_id), /^[0-9a-f-]{36}$/);
  assert.deepEqual(events.slice(1), [
    { type: "token", content: "Hel" },
    { type: "token", content: "lo" },
    { type: "message", content: { type: "ai", content: "Hello", run_id: "run-1", tool_calls: [] } },
    { type: "done" },
  ]);
  const sent = upstream.requests[0];
  assert.equal(sent?.headers.authorization, `Bearer ${TOKEN}`);
  assert.deepEqual(JSON.parse(sent?.body ?? ""), {
    input: { message: "Hi there" },
    thread_id: thread?.thread_id,
    user_id: USER,
    stream_tokens: true,
    stream_resumable: true,
  });

  // Feedback on that run carries the proof the server kept.
  upstream.route("POST /create-agent/feedback", (_req, res) => sendJson(res, 201, { feedback_id: "f-1", run_id: "run-1", key: "human-feedback-thumbs", delivery: "queued" }));
  const feedback = await post("/api/feedback", { agent: "create-agent", run_id: "run-1", score: 1 });
  assert.equal(feedback.status, 200);
  // Where agenthost says the feedback went reaches the page, so it thanks only for a recorded one.
  assert.deepEqual(await feedback.json(), { delivery: "queued" });
  assert.deepEqual(JSON.parse(upstream.requests.at(-1)?.body ?? ""), {
    run_id: "run-1",
    key: "human-feedback-thumbs",
    score: 1,
    user_id: USER,
    feedback_token: "proof-1",
  });
  // A proof is only used for the agent that issued it.
  upstream.route("POST /chatbot-agent/feedback", (_req, res) => sendJson(res, 201, {}));
  const unsaid = await post("/api/feedback", { agent: "chatbot-agent", run_id: "run-1", score: 0 });
  assert.equal(JSON.parse(upstream.requests.at(-1)?.body ?? "").feedback_token, undefined);
  // An agenthost that does not say where feedback goes: null. One that records it nowhere: skipped.
  assert.deepEqual(await unsaid.json(), { delivery: null });
  upstream.route("POST /chatbot-agent/feedback", (_req, res) =>
    sendJson(res, 201, { feedback_id: "f-2", run_id: "run-1", key: "human-feedback-thumbs", delivery: "skipped", detail: "not recorded" }),
  );
  assert.deepEqual(await (await post("/api/feedback", { agent: "chatbot-agent", run_id: "run-1", score: 0 })).json(), { delivery: "skipped" });
  upstream.route("POST /chatbot-agent/feedback", (_req, res) => sendJson(res, 201, { delivery: "<img src=x>" }));
  assert.deepEqual(await (await post("/api/feedback", { agent: "chatbot-agent", run_id: "run-1", score: 0 })).json(), { delivery: null });
});

test("/api/chat keeps a given thread and reports agenthost's failures as error events", async () => {
  upstream.route("POST /chatbot-agent/stream", (_req, res) =>
    sendJson(res, 503, { detail: "The worker is busy.", error_code: "service_busy" }, { "retry-after": "1" }),
  );
  const events = plain(await chatEvents({ agent: "chatbot-agent", thread_id: "t-7", message: "Hi" }));
  assert.deepEqual(events, [
    { type: "thread", thread_id: "t-7" },
    {
      type: "error",
      error: { message: "agenthost answered 503: The worker is busy.", kind: "http", status: 503, error_code: "service_busy", retry_after: "1" },
    },
  ]);
  assert.equal(JSON.parse(upstream.requests[0]?.body ?? "").thread_id, "t-7");

  upstream.route("POST /chatbot-agent/stream", (_req, res) => {
    startSse(res);
    res.end(sseFrame({ type: "error", content: "The agent run failed.", error_code: "run_failed" }));
  });
  const failed = plain(await chatEvents({ agent: "chatbot-agent", thread_id: "t-7", message: "Hi" }));
  assert.deepEqual(failed.at(-1), {
    type: "error",
    error: { message: "the agent run failed: The agent run failed.", kind: "event", status: null, error_code: "run_failed", retry_after: null },
  });
});

test("closing the browser's request mid-answer closes the stream to agenthost and stops the run there", async () => {
  let closed: Promise<void> | undefined;
  upstream.route("POST /chatbot-agent/stream", (req, res) => {
    closed = req.closed;
    startSse(res);
    res.write(sseFrame({ type: "token", content: "slow" }));
  });
  upstream.route("POST /chatbot-agent/cancel", (req, res) => {
    const body = JSON.parse(req.body) as { thread_id: string };
    sendJson(res, 200, { thread_id: body.thread_id, cancelled: true, run_id: "run-slow" });
  });
  const controller = new AbortController();
  const response = await fetch(`${page.url}/api/chat`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ agent: "chatbot-agent", thread_id: "t-leave", message: "Hi" }),
    signal: controller.signal,
  });
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  while (!text.includes('"type":"token"')) text += decoder.decode((await reader.read()).value);
  controller.abort();
  await closed;
  await waitFor(() => upstream.requests.some((r) => r.path === "/chatbot-agent/cancel"), "the cancel at agenthost");
  const cancel = upstream.requests.find((r) => r.path === "/chatbot-agent/cancel")!;
  assert.deepEqual(JSON.parse(cancel.body), { thread_id: "t-leave", user_id: USER });
  assert.equal(cancel.headers.authorization, `Bearer ${TOKEN}`);
});

test("/api/chat/follow replays an answer after a given event, and knows no other answer", async () => {
  upstream.route("POST /chatbot-agent/stream", (_req, res) => {
    startSse(res);
    res.write(sseFrame({ type: "token", content: "One" }));
    res.write(sseFrame({ type: "token", content: " two" }));
    res.end(sseFrame("[DONE]"));
  });
  const events = await chatEvents({ agent: "chatbot-agent", thread_id: "t-f", message: "Hi" });
  const follow = await fetch(`${page.url}/api/chat/follow?stream_id=${String(events[0]?.stream_id)}&after=2`);
  assert.equal(follow.status, 200);
  const lines = (await follow.text()).trim().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
  assert.deepEqual(lines, [{ type: "token", content: " two", seq: 3 }, { type: "done", seq: 4 }]);
  const unknown = await fetch(`${page.url}/api/chat/follow?stream_id=nope`);
  assert.equal(unknown.status, 404);
  assert.equal(((await unknown.json()) as { error: { message: string } }).error.message, "this answer is no longer available");
});

test("/api/history returns every page, for the configured user, trimmed", async () => {
  upstream.route("GET /chatbot-agent/history", (req, res) => {
    const offset = Number(req.query.get("offset"));
    sendJson(res, 200, offset === 0
      ? { messages: [{ type: "human", content: "q", thread_id: "t" }], total: 2, next_offset: 1 }
      : { messages: [aiMessage("a", { feedback_token: "never-shown" })], total: 2, next_offset: null });
  });
  const response = await fetch(`${page.url}/api/history?agent=chatbot-agent&thread_id=t`);
  assert.equal(response.status, 200);
  assert.deepEqual(await response.json(), {
    messages: [
      { type: "human", content: "q", run_id: null, tool_calls: [] },
      { type: "ai", content: "a", run_id: "run-1", tool_calls: [] },
    ],
    older: null,
  });
  assert.deepEqual(upstream.requests.map((r) => [r.query.get("thread_id"), r.query.get("user_id"), r.query.get("offset")]), [
    ["t", USER, "0"],
    ["t", USER, "1"],
  ]);
});

test("/api/history of a long conversation: the newest 50 first, then the page before a given position", async () => {
  const TOTAL = 120;
  upstream.route("GET /chatbot-agent/history", (req, res) => {
    const offset = Number(req.query.get("offset"));
    const limit = Number(req.query.get("limit"));
    const end = Math.min(TOTAL, offset + limit);
    const messages = Array.from({ length: end - offset }, (_, i) => ({ type: "human", content: `m${offset + i}`, thread_id: "t" }));
    sendJson(res, 200, { messages, total: TOTAL, next_offset: end < TOTAL ? end : null });
  });
  const get = async (query: string) => {
    const response = await fetch(`${page.url}/api/history?agent=chatbot-agent&thread_id=t${query}`);
    return { status: response.status, body: (await response.json()) as { messages: { content: string }[]; older: number | null } };
  };
  const newest = await get("");
  assert.equal(newest.status, 200);
  assert.deepEqual([newest.body.messages.length, newest.body.messages[0]?.content, newest.body.messages.at(-1)?.content, newest.body.older], [50, "m70", "m119", 70]);
  const before = await get("&before=70");
  assert.deepEqual([before.body.messages.length, before.body.messages[0]?.content, before.body.older], [50, "m20", 20]);
  const first = await get("&before=20");
  assert.deepEqual([first.body.messages.length, first.body.messages[0]?.content, first.body.older], [20, "m0", null]);
  assert.equal((await get("&before=-1")).status, 400);
  assert.equal((await get("&before=ten")).status, 400);
});

test("/api/threads lists the user's conversations; /api/cancel and /api/clear act for the configured user", async () => {
  upstream.route("GET /chatbot-agent/threads", (_req, res) =>
    sendJson(res, 200, {
      threads: [{ thread_id: "t1", title: "Hello", created_at: "2026-01-01T00:00:00Z", updated_at: "2026-01-02T00:00:00Z", message_count: 2 }],
      total: 1,
      next_offset: null,
    }),
  );
  upstream.route("POST /chatbot-agent/cancel", (_req, res) => sendJson(res, 200, { thread_id: "t1", cancelled: false, run_id: null }));
  upstream.route("DELETE /chatbot-agent/history/clear", (_req, res) => sendJson(res, 200, { status: "success" }));
  const threads = await fetch(`${page.url}/api/threads?agent=chatbot-agent`);
  assert.deepEqual(await threads.json(), { threads: [{ thread_id: "t1", title: "Hello", updated_at: "2026-01-02T00:00:00Z" }], next_offset: null });
  const list = upstream.requests.find((r) => r.path === "/chatbot-agent/threads")!;
  assert.deepEqual([list.query.get("user_id"), list.query.get("limit"), list.query.get("offset")], [USER, "30", "0"]);
  assert.equal((await fetch(`${page.url}/api/threads`)).status, 400);
  const stop = await post("/api/cancel", { agent: "chatbot-agent", thread_id: "t1" }, { origin: page.url });
  assert.deepEqual(await stop.json(), { cancelled: false });
  const clear = await post("/api/clear", { agent: "chatbot-agent", thread_id: "t1" }, { origin: page.url });
  assert.equal(clear.status, 200);
  assert.deepEqual(JSON.parse(upstream.requests.find((r) => r.path === "/chatbot-agent/history/clear")!.body), { thread_id: "t1", user_id: USER });
  assert.equal((await post("/api/clear", { agent: "chatbot-agent" }, { origin: page.url })).status, 422);
});

test("agenthost's HTTP failures keep their status for the page's JSON calls", async () => {
  upstream.route("GET /chatbot-agent/history", (_req, res) => sendJson(res, 404, { detail: "Not found." }));
  const response = await fetch(`${page.url}/api/history?agent=chatbot-agent&thread_id=t`);
  assert.equal(response.status, 404);
  assert.deepEqual(await response.json(), {
    error: { message: "agenthost answered 404: Not found.", kind: "http", status: 404, error_code: null, retry_after: null },
  });
  assert.equal((await fetch(`${page.url}/api/history?agent=chatbot-agent`)).status, 400);
});

test("refuses cross-site use of its token: JSON only, same origin only, bounded and validated bodies", async () => {
  const body = { agent: "chatbot-agent", message: "Hi" };
  assert.equal((await post("/api/chat", JSON.stringify(body), { "content-type": "text/plain" })).status, 415);
  assert.equal((await post("/api/chat", body, { origin: "https://evil.example" })).status, 403);
  assert.equal((await post("/api/feedback", { agent: "a", run_id: "r", score: 5 })).status, 422);
  assert.equal((await post("/api/chat", { agent: "a", message: "   " })).status, 422);
  assert.equal((await post("/api/chat", "{nope")).status, 400);
  assert.equal((await post("/api/chat", { agent: "a", message: "x".repeat(15 * 1024 * 1024) })).status, 413);
  assert.equal(upstream.requests.length, 0);
  const sameOrigin = await post("/api/feedback", { agent: "a", run_id: "r", score: 1 }, { origin: page.url });
  assert.notEqual(sameOrigin.status, 403);
});

test("feedback proofs are bounded: the oldest are forgotten first", () => {
  const tokens = new FeedbackTokens(2);
  tokens.remember("a", "r1", "p1");
  tokens.remember("a", "r2", "p2");
  tokens.remember("a", "r3", "p3");
  assert.equal(tokens.size, 2);
  assert.equal(tokens.lookup("a", "r1"), undefined);
  assert.equal(tokens.lookup("a", "r3"), "p3");
  assert.equal(tokens.lookup("b", "r3"), undefined);
});

/** One request to a page with the Host header it is given (fetch sets its own), its status and body. */
function sendAs(
  url: string,
  host: string,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  const { port } = new URL(url);
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path,
        method: options.method ?? "GET",
        // Node's client would add its own Host next to an empty one.
        setHost: false,
        headers: { host, ...(body === undefined ? {} : { "content-type": "application/json" }), ...options.headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

const REFUSED_HOST = {
  error: {
    message:
      "This chat page does not answer under the host name this request was sent to. " +
      "Open it as localhost or 127.0.0.1, or add the name to CHAT_UI_ALLOWED_HOSTS.",
    kind: "request",
    status: 421,
    error_code: "host_not_allowed",
    retry_after: null,
  },
};

function assertRefusedHost(response: { status: number; headers: IncomingHttpHeaders; body: string }, what: string): void {
  assert.equal(response.status, 421, what);
  assert.match(response.headers["content-type"] ?? "", /^application\/json/, what);
  assert.deepEqual(JSON.parse(response.body), REFUSED_HOST, what);
}

/** Every kind of route: the page itself, a script, the reads, a message, an answer to an approval, a delete. */
function everyRoute(host: string) {
  const origin = { origin: `http://${host}` };
  return [
    { what: "the page", path: "/" },
    { what: "a script", path: "/app.js" },
    { what: "the agents", path: "/api/agents" },
    { what: "the conversations", path: "/api/threads?agent=chatbot-agent" },
    { what: "a conversation", path: "/api/history?agent=chatbot-agent&thread_id=t1" },
    { what: "a follow", path: "/api/chat/follow?stream_id=x" },
    { what: "a message", path: "/api/chat", method: "POST", headers: origin, body: { agent: "chatbot-agent", thread_id: "t1", message: "Hi" } },
    { what: "an approval", path: "/api/chat", method: "POST", headers: origin, body: { agent: "chatbot-agent", thread_id: "t1", message: "approve" } },
    { what: "a stop", path: "/api/cancel", method: "POST", headers: origin, body: { agent: "chatbot-agent", thread_id: "t1" } },
    { what: "a thumbs up", path: "/api/feedback", method: "POST", headers: origin, body: { agent: "chatbot-agent", run_id: "r", score: 1 } },
    { what: "a delete", path: "/api/clear", method: "POST", headers: origin, body: { agent: "chatbot-agent", thread_id: "t1" } },
    { what: "an unknown path", path: "/nope" },
    { what: "another method", path: "/", method: "DELETE" },
  ];
}

test("a DNS-rebinding site is refused on every route, with its own Origin too, and nothing reaches agenthost", async () => {
  upstream.route("GET /chatbot-agent/threads", (_req, res) => sendJson(res, 200, { threads: [], total: 0, next_offset: null }));
  upstream.route("GET /chatbot-agent/history", (_req, res) => sendJson(res, 200, { messages: [], total: 0, next_offset: null }));
  upstream.route("POST /chatbot-agent/cancel", (_req, res) => sendJson(res, 200, { thread_id: "t1", cancelled: false, run_id: null }));
  upstream.route("DELETE /chatbot-agent/history/clear", (_req, res) => sendJson(res, 200, { status: "success" }));
  for (const host of ["attacker.example:8501", "attacker.example", "localhost.attacker.example:8501", "127.0.0.1.nip.io:8501"]) {
    for (const { what, ...options } of everyRoute(host)) assertRefusedHost(await sendAs(page.url, host, options.path, options), `${host}: ${what}`);
  }
  assert.equal(upstream.requests.length, 0);

  // The names it is served under answer, with any port (a proxy in front may listen on another).
  const port = new URL(page.url).port;
  for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LocalHost.:${port}`, `[::1]:${port}`, "localhost", "127.0.0.1:9999"]) {
    const threads = await sendAs(page.url, host, "/api/threads?agent=chatbot-agent");
    assert.equal(threads.status, 200, host);
    assert.equal((await sendAs(page.url, host, "/")).status, 200, host);
    const origin = host.startsWith("LocalHost.") ? `http://localhost.:${port}` : `http://${host}`;
    const stop = await sendAs(page.url, host, "/api/cancel", { method: "POST", headers: { origin }, body: { agent: "chatbot-agent", thread_id: "t1" } });
    assert.equal(stop.status, 200, host);
  }
  const clear = await sendAs(page.url, `localhost:${port}`, "/api/clear", {
    method: "POST",
    headers: { origin: `http://localhost:${port}` },
    body: { agent: "chatbot-agent", thread_id: "t1" },
  });
  assert.equal(clear.status, 200);
  assert.ok(upstream.requests.some((r) => r.path === "/chatbot-agent/history/clear"));
});

test("the Origin of a state-changing call must be the page's own: its Host's name and port, an allowed name", async () => {
  const port = new URL(page.url).port;
  const stop = (host: string, origin: string) =>
    sendAs(page.url, host, "/api/cancel", { method: "POST", headers: { origin }, body: { agent: "chatbot-agent", thread_id: "t1" } });
  upstream.route("POST /chatbot-agent/cancel", (_req, res) => sendJson(res, 200, { thread_id: "t1", cancelled: false, run_id: null }));
  for (const origin of [
    "http://attacker.example:8501",
    `http://attacker.example:${port}`,
    `http://localhost:${Number(port) + 1}`,
    `http://127.0.0.1:${port}`,
    "null",
    `http://localhost:${port}/`,
    `ftp://localhost:${port}`,
    `http://user@localhost:${port}`,
    "",
  ]) {
    const response = await stop(`localhost:${port}`, origin);
    assert.equal(response.status, 403, origin);
    assert.equal((JSON.parse(response.body) as { error: { message: string } }).error.message, "cross-origin requests are refused");
  }
  assert.equal(upstream.requests.length, 0);
  for (const [host, origin] of [
    [`localhost:${port}`, `http://localhost:${port}`],
    [`localhost:${port}`, `HTTP://LOCALHOST:${port}`],
    [`localhost:${port}`, `https://localhost:${port}`],
    ["localhost", "http://localhost"],
    ["localhost", "https://localhost:443"],
    ["localhost:80", "http://localhost"],
  ] as const) {
    assert.equal((await stop(host, origin)).status, 200, `${host} ${origin}`);
  }
});

test("hostile Host values are refused: empty, missing, repeated, very long, odd characters, another target", async () => {
  for (const host of [
    "",
    " ",
    "x".repeat(300),
    `${"a.".repeat(4000)}localhost`,
    "localhost:8501:1",
    "localhost:abc",
    "localhost:123456",
    "user@localhost",
    "localhost/x",
    "localhost%2e",
    "localhost\\",
    "local host",
    "l\u00f3calhost",
    "[::1",
    "::1",
    "[localhost]",
    "[fe80::1%25lo]",
    "[127.0.0.1]",
    "127.1",
    "0x7f.0.0.1",
    "2130706433",
    "localhost..",
    ".localhost",
    "*",
    "\t",
  ]) {
    assertRefusedHost(await sendAs(page.url, host, "/api/threads?agent=chatbot-agent"), JSON.stringify(host));
  }

  // Without Host (HTTP/1.0; HTTP/1.1 without one is Node's own 400), with two, or with an absolute
  // target naming another host; HTTP/1.0 with an allowed Host is served.
  const raw = async (text: string) => {
    const client = await RawClient.connect(page.url);
    try {
      client.write(text);
      return await client.response();
    } finally {
      client.destroy();
    }
  };
  for (const text of [
    "GET /api/threads?agent=chatbot-agent HTTP/1.0\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: localhost\r\nHost: attacker.example\r\nConnection: close\r\n\r\n",
    "GET http://attacker.example:8501/api/threads?agent=chatbot-agent HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
  ]) {
    const response = await raw(text);
    assert.equal(response.status, 421, JSON.stringify(text));
    assert.deepEqual(JSON.parse(response.body), REFUSED_HOST);
  }
  assert.equal((await raw("GET / HTTP/1.1\r\nConnection: close\r\n\r\n")).status, 400);
  assert.equal((await raw("GET /style.css HTTP/1.0\r\nHost: localhost\r\n\r\n")).status, 200);
  assert.equal(upstream.requests.length, 0);
});

test("CHAT_UI_ALLOWED_HOSTS names the page answers under too; the bound address is one", async () => {
  upstream.route("GET /chatbot-agent/threads", (_req, res) => sendJson(res, 200, { threads: [], total: 0, next_offset: null }));
  upstream.route("POST /chatbot-agent/cancel", (_req, res) => sendJson(res, 200, { thread_id: "t1", cancelled: false, run_id: null }));
  const named = await startChatServer(
    { agenthostUrl: upstream.url, authSecret: TOKEN, userId: USER, host: "127.0.0.1", port: 0, allowedHosts: ["chat.example.test", "::2"] },
    { reconnectGraceMs: 0 },
  );
  try {
    for (const host of ["chat.example.test:8501", "Chat.Example.Test.", "chat.example.test", "[0:0:0:0:0:0:0:2]:8501"]) {
      assert.equal((await sendAs(named.url, host, "/api/threads?agent=chatbot-agent")).status, 200, host);
      assert.equal((await sendAs(named.url, host, "/")).status, 200, host);
    }
    const stop = await sendAs(named.url, "chat.example.test:8501", "/api/cancel", {
      method: "POST",
      headers: { origin: "http://chat.example.test:8501" },
      body: { agent: "chatbot-agent", thread_id: "t1" },
    });
    assert.equal(stop.status, 200);
    const before = upstream.requests.length;
    for (const host of ["other.example.test:8501", "www.chat.example.test", "example.test"]) {
      assertRefusedHost(await sendAs(named.url, host, "/api/threads?agent=chatbot-agent"), host);
    }
    // The page's own name is not a pass for another allowed name's Origin.
    const crossed = await sendAs(named.url, "chat.example.test:8501", "/api/cancel", {
      method: "POST",
      headers: { origin: "http://localhost:8501" },
      body: { agent: "chatbot-agent", thread_id: "t1" },
    });
    assert.equal(crossed.status, 403);
    assert.equal(upstream.requests.length, before);
  } finally {
    await named.close();
  }
  // The page in the existing tests is bound to 127.0.0.1; one bound to localhost answers both too.
  const local = await startChatServer({ agenthostUrl: upstream.url, authSecret: TOKEN, userId: USER, host: "localhost", port: 0 }, { reconnectGraceMs: 0 });
  try {
    const port = new URL(local.url).port;
    assert.equal((await sendAs(local.url, `localhost:${port}`, "/")).status, 200);
    assertRefusedHost(await sendAs(local.url, `attacker.example:${port}`, "/"), "attacker");
  } finally {
    await local.close();
  }
});

test("allowed names by listen address: loopback names always, the address itself, any IP address on 0.0.0.0 or ::, names only when listed", () => {
  const names = (hosts: AllowedHosts, values: string[]) => values.filter((value) => {
    const host = parseHost(value);
    return host !== undefined && hosts.allows(host.name);
  });
  const candidates = ["localhost", "127.0.0.1", "[::1]", "192.168.1.20", "[fe80::1]", "[::ffff:7f00:1]", "myhost", "chat.example.test", "10.0.0.1"];

  assert.deepEqual(names(new AllowedHosts("127.0.0.1"), candidates), ["localhost", "127.0.0.1", "[::1]"]);
  assert.deepEqual(names(new AllowedHosts("192.168.1.20"), candidates), ["localhost", "127.0.0.1", "[::1]", "192.168.1.20"]);
  assert.deepEqual(names(new AllowedHosts("MyHost."), candidates), ["localhost", "127.0.0.1", "[::1]", "myhost"]);
  assert.deepEqual(names(new AllowedHosts("fe80::0:1"), candidates), ["localhost", "127.0.0.1", "[::1]", "[fe80::1]"]);
  const everyAddress = ["localhost", "127.0.0.1", "[::1]", "192.168.1.20", "[fe80::1]", "[::ffff:7f00:1]", "10.0.0.1"];
  assert.deepEqual(names(new AllowedHosts("0.0.0.0"), candidates), everyAddress);
  assert.deepEqual(names(new AllowedHosts("::"), candidates), everyAddress);
  assert.deepEqual(names(new AllowedHosts("0.0.0.0", ["chat.example.test"]), candidates), [...everyAddress.slice(0, 6), "chat.example.test", "10.0.0.1"]);

  assert.deepEqual(parseHost("LOCALHOST.:08501"), { name: "localhost", port: "08501" });
  assert.deepEqual(parseHost("[0:0::1]"), { name: "::1", port: "" });
  assert.equal(parseHost("localhost:"), undefined);
});
