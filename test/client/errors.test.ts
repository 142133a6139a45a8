// HTTP failures, timeouts, network failures and cancellation of non-streaming calls, against a
// scripted server: what AgentClientError carries, and that the client never retries.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { AgentClient } from "../../src/client/index.ts";
import { failure, sendJson, startScriptedServer, type ScriptedServer } from "./scripted-server.ts";

let server: ScriptedServer;
const client = (options: { timeout?: number } = {}) =>
  new AgentClient({ baseUrl: server.url, agent: "bot", authSecret: "s3cret", ...options });

before(async () => {
  server = await startScriptedServer();
});
after(() => server.close());

test("503 service_busy: status, error_code and Retry-After, and exactly one request (no retry)", async () => {
  server.route("POST /bot/invoke", (_req, res) =>
    sendJson(res, 503, { detail: "The worker is busy.", error_code: "service_busy" }, { "Retry-After": "1" }),
  );
  const before = server.requests.length;
  const error = await failure(client().invoke("hi"));
  assert.equal(error.kind, "http");
  assert.equal(error.statusCode, 503);
  assert.equal(error.errorCode, "service_busy");
  assert.equal(error.retryAfter, "1");
  assert.equal(error.detail, "The worker is busy.");
  assert.equal(error.message, "agenthost answered 503: The worker is busy.");
  assert.equal(server.requests.length - before, 1);
});

test("Retry-After as an HTTP date is passed through as given", async () => {
  const date = "Wed, 21 Oct 2026 07:28:00 GMT";
  server.route("POST /bot/invoke", (_req, res) => sendJson(res, 429, { detail: "Rate limited." }, { "retry-after": date }));
  const error = await failure(client().invoke("hi"));
  assert.equal(error.statusCode, 429);
  assert.equal(error.retryAfter, date);
  assert.equal(error.errorCode, null);
});

test("each failure status of the spec becomes an AgentClientError with its status", async () => {
  for (const [status, code] of [
    [401, null],
    [403, null],
    [404, null],
    [409, "conversation_busy"],
    [413, "payload_too_large"],
    [504, "request_timeout"],
  ] as const) {
    server.route("POST /bot/invoke", (_req, res) =>
      sendJson(res, status, code ? { detail: `failed ${status}`, error_code: code } : { detail: `failed ${status}` }),
    );
    const error = await failure(client().invoke("hi"));
    assert.equal(error.statusCode, status);
    assert.equal(error.errorCode, code);
    assert.equal(error.retryAfter, null);
    assert.match(error.message, new RegExp(`${status}: failed ${status}`));
  }
});

test("422 with a list of validation problems is summarised in the message", async () => {
  server.route("POST /bot/invoke", (_req, res) =>
    sendJson(res, 422, {
      detail: [{ loc: ["body", "agent_config", "thread_id"], msg: "agent_config must not carry thread_id" }, { msg: "x" }],
      error_code: "validation_failed",
    }),
  );
  const error = await failure(client().invoke("hi", { agent_config: { thread_id: "nope" } }));
  assert.equal(error.statusCode, 422);
  assert.equal(error.message, "agenthost answered 422: agent_config must not carry thread_id; x");
  assert.ok(Array.isArray(error.detail));
});

test("a non-JSON error page keeps its status; its text is the detail", async () => {
  server.route("GET /bot/history", (_req, res) => {
    res.writeHead(502, { "content-type": "text/html" });
    res.end("<html><body>Bad gateway</body></html>");
  });
  const error = await failure(client().getHistory({ thread_id: "t" }));
  assert.equal(error.statusCode, 502);
  assert.equal(error.errorCode, null);
  assert.equal(error.detail, "<html><body>Bad gateway</body></html>");
});

test("a 200 answer that is not JSON, or not the expected shape, is a protocol error", async () => {
  server.route("POST /bot/invoke", (_req, res) => {
    res.writeHead(200, { "content-type": "text/plain" });
    res.end("hello");
  });
  assert.equal((await failure(client().invoke("hi"))).kind, "protocol");
  server.route("POST /bot/invoke", (_req, res) => sendJson(res, 200, { hello: "world" }));
  assert.equal((await failure(client().invoke("hi"))).kind, "protocol");
  server.route("GET /info", (_req, res) => sendJson(res, 200, { agents: "none" }));
  assert.equal((await failure(client().info())).kind, "protocol");
});

test("timeout bounds a non-streaming call that never answers", async () => {
  let closed: Promise<void> | undefined;
  server.route("POST /bot/invoke", (req) => {
    closed = req.closed; // never answers
  });
  const started = Date.now();
  const error = await failure(client({ timeout: 150 }).invoke("hi"));
  assert.equal(error.kind, "timeout");
  assert.match(error.message, /within 150 ms/);
  assert.ok(Date.now() - started < 2000);
  await closed;
});

test("an AbortSignal cancels a call in flight with the signal's reason; the server sees the close", async () => {
  let closed: Promise<void> | undefined;
  const controller = new AbortController();
  server.route("POST /bot/invoke", (req) => {
    closed = req.closed;
    controller.abort(new Error("user pressed stop")); // the request has arrived and gets no answer
  });
  await assert.rejects(client().invoke("hi", { signal: controller.signal }), { message: "user pressed stop" });
  await closed;
});

test("an already-aborted signal rejects without sending anything", async () => {
  const before = server.requests.length;
  for (const call of [
    (signal: AbortSignal) => client().createFeedback({ run_id: "r", key: "k", score: 1 }, { signal }),
    (signal: AbortSignal) => client().info({ signal }),
    (signal: AbortSignal) => client().stream("hi", { signal }).next(),
  ]) {
    await assert.rejects(call(AbortSignal.abort()), { name: "AbortError" });
  }
  assert.equal(server.requests.length, before);
});

test("a refused connection is a network error", async () => {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  const error = await failure(new AgentClient({ baseUrl: `http://127.0.0.1:${port}`, agent: "bot" }).invoke("hi"));
  assert.equal(error.kind, "network");
  assert.equal(error.statusCode, null);
  assert.match(error.message, /request to agenthost failed/);
});
