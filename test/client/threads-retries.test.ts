// The client's conversation list, idempotency keys, header hook and opt-in retries: against the real
// agenthost (in this process, memory backend, fake model), and a scripted server for the answers the
// service gives only under load (429 with an HTTP-date Retry-After).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { AgentClient, retryAfterMs, type AgentClientError, type OutgoingRequest } from "../../src/client/index.ts";
import { waitFor } from "../helpers/raw-http.ts";
import { startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";
import { aiMessage, sendJson, startScriptedServer, type ScriptedServer } from "./scripted-server.ts";

const SLOW = JSON.stringify(["./test/fixtures/spine-agents.ts:slowAgent"]);

let service: RunningService;
before(async () => {
  service = await startService({ AGENT_PATHS: SLOW, REQUEST_MAX_CONCURRENT: "1" });
});
after(async () => {
  await service?.close();
});

const client = (options: Partial<ConstructorParameters<typeof AgentClient>[0]> = {}) =>
  new AgentClient({ baseUrl: service.url, authSecret: TEST_TOKEN, agent: "chatbot-agent", ...options });

describe("listThreads", () => {
  test("lists the caller's conversations, newest first, and pages", async () => {
    const c = client();
    const first = await c.invoke("a first question", { user_id: "lister" });
    const start = Date.now();
    await waitFor(() => Date.now() > start, "the next millisecond");
    await c.invoke("another one", { user_id: "lister", thread_id: "named" });
    const page = await c.listThreads({ user_id: "lister" });
    assert.equal(page.total, 2);
    assert.equal(page.next_offset, null);
    assert.deepEqual(page.threads.map((t) => [t.thread_id, t.title, t.message_count]), [
      ["named", "another one", 2],
      [first.thread_id, "a first question", 2],
    ]);
    const one = await c.listThreads({ user_id: "lister", limit: 1, offset: 1 });
    assert.deepEqual(one.threads.map((t) => t.thread_id), [first.thread_id]);
    assert.equal((await c.listThreads({ user_id: "nobody" })).total, 0);
    await assert.rejects(c.listThreads({ limit: 101 }), (error: AgentClientError) => error.statusCode === 422);
  });
});

describe("idempotency keys", () => {
  test("the same idempotencyKey replays invoke, addMessages and createFeedback", async () => {
    const c = client();
    const a = await c.invoke("only once", { thread_id: "idem-client", idempotencyKey: "client-key-1" });
    const b = await c.invoke("only once", { thread_id: "idem-client", idempotencyKey: "client-key-1" });
    assert.deepEqual(b, a);
    const history = await c.getHistory({ thread_id: "idem-client" });
    assert.equal(history.total, 2);

    const request = { thread_id: "idem-client", messages: [{ type: "human" as const, content: "appended once" }] };
    const added = await c.addMessages(request, { idempotencyKey: "client-key-2" });
    assert.deepEqual(await c.addMessages(request, { idempotencyKey: "client-key-2" }), added);
    assert.equal((await c.getHistory({ thread_id: "idem-client" })).total, 3);

    const feedback = { run_id: a.run_id!, key: "good", score: 1 };
    const sent = await c.createFeedback(feedback, { idempotencyKey: "client-key-3" });
    assert.deepEqual(await c.createFeedback(feedback, { idempotencyKey: "client-key-3" }), sent);

    await assert.rejects(
      c.invoke("a different body", { thread_id: "idem-client", idempotencyKey: "client-key-1" }),
      (error: AgentClientError) => error.statusCode === 422 && error.errorCode === "idempotency_key_reused",
    );
  });
});

describe("retries and the header hook", () => {
  test("without a retry policy a 503 fails at once; with one the invoke waits out Retry-After under one key", async () => {
    // The worker has one slot: a slow run holds it while the client calls.
    const slow = fetch(`${service.url}/slow-agent/invoke`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ input: { message: "hold the slot" }, agent_config: { sleep_ms: 1500 } }),
    });
    await waitFor(() => service.runtime.admission.activeCount === 1, "the slow run's admission slot");

    await assert.rejects(client().invoke("refused"), (error: AgentClientError) => error.statusCode === 503 && error.retryAfter === "1");

    const seen: OutgoingRequest[] = [];
    const keys: Array<string | undefined> = [];
    const retrying = client({
      retry: { maxAttempts: 5 },
      headers: (request) => {
        seen.push(request);
        return { "x-request-id": `hooked-${request.attempt}`, Authorization: "Bearer not-this-one" };
      },
      fetch: (input, init) => {
        keys.push((init.headers as Record<string, string>)["idempotency-key"]);
        return globalThis.fetch(input, init);
      },
    });
    const answer = await retrying.invoke("after the wait", { thread_id: "retried" });
    assert.equal((await slow).status, 200);
    assert.equal(answer.type, "ai");
    assert.ok(seen.length >= 2, `attempts: ${seen.length}`);
    assert.deepEqual(seen.map((s) => s.attempt), seen.map((_, i) => i + 1));
    assert.ok(seen.every((s) => s.method === "POST" && s.path === "/chatbot-agent/invoke"));
    assert.equal(keys.length, seen.length);
    assert.match(String(keys[0]), /^[0-9a-f-]{36}$/, "a key is made up for a retried invoke");
    assert.ok(keys.every((k) => k === keys[0]), JSON.stringify(keys));
    assert.equal((await client().getHistory({ thread_id: "retried" })).total, 2, "the turn ran once");
    // The request ids the hook set reached the service.
    const ids = service.logs.filter((line) => typeof line.request_id === "string" && line.request_id.startsWith("hooked-")).map((line) => line.request_id);
    assert.ok(ids.includes("hooked-1") && ids.includes("hooked-2"), JSON.stringify(ids));
  });

  test("every attempt of a retried invoke carries the same generated Idempotency-Key", async () => {
    let scripted: ScriptedServer | undefined;
    try {
      let calls = 0;
      scripted = await startScriptedServer({
        "POST /a/invoke": (_req, res) => {
          calls++;
          if (calls === 1) sendJson(res, 429, { detail: "slow down", error_code: "model_rate_limited" }, { "retry-after": new Date(Date.now() + 1000).toUTCString() });
          else if (calls === 2) sendJson(res, 503, { detail: "busy", error_code: "service_busy" }, { "retry-after": "0" });
          else sendJson(res, 200, aiMessage("finally"));
        },
      });
      const c = new AgentClient({ baseUrl: scripted.url, agent: "a", authSecret: "t", retry: { maxAttempts: 3, maxDelayMs: 5_000 } });
      const message = await c.invoke("hi");
      assert.equal(message.content, "finally");
      const keys = scripted.requests.map((r) => r.headers["idempotency-key"]);
      assert.equal(keys.length, 3);
      assert.match(String(keys[0]), /^[0-9a-f-]{36}$/);
      assert.ok(keys.every((k) => k === keys[0]), JSON.stringify(keys));

      // A Retry-After beyond maxDelayMs, and a status that is not 429/503, are not retried.
      scripted.route("POST /a/invoke", (_req, res) => sendJson(res, 503, { detail: "later" }, { "retry-after": "60" }));
      const before = scripted.requests.length;
      await assert.rejects(c.invoke("hi"), (error: AgentClientError) => error.statusCode === 503);
      scripted.route("POST /a/invoke", (_req, res) => sendJson(res, 500, { detail: "boom" }));
      await assert.rejects(c.invoke("hi"), (error: AgentClientError) => error.statusCode === 500);
      // A replayed failure is the key's final answer: not retried either.
      scripted.route("POST /a/invoke", (_req, res) =>
        sendJson(res, 503, { detail: "provider down", error_code: "model_unavailable" }, { "retry-after": "0", "idempotent-replayed": "true" }),
      );
      await assert.rejects(c.invoke("hi"), (error: AgentClientError) => error.errorCode === "model_unavailable");
      assert.equal(scripted.requests.length, before + 3);
      // Without retries no key is made up.
      scripted.route("POST /a/invoke", (_req, res) => sendJson(res, 200, aiMessage("plain")));
      await new AgentClient({ baseUrl: scripted.url, agent: "a", authSecret: "t" }).invoke("hi");
      assert.equal(scripted.requests.at(-1)!.headers["idempotency-key"], undefined);
    } finally {
      await scripted?.close();
    }
  });

  test("retryAfterMs reads seconds and HTTP dates", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    assert.equal(retryAfterMs("2", now), 2000);
    assert.equal(retryAfterMs("Thu, 01 Jan 2026 00:00:03 GMT", now), 3000);
    assert.equal(retryAfterMs("Wed, 31 Dec 2025 23:00:00 GMT", now), 0);
    assert.equal(retryAfterMs("soon", now), undefined);
    assert.equal(retryAfterMs(null, now), undefined);
  });
});
