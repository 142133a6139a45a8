import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { storageKey } from "../../src/auth/storage-key.ts";
import { call, startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";
import { MemoryConversationLock } from "../../src/coordination/locks/memory-lock.ts";
import { waitFor } from "../helpers/raw-http.ts";
import { parseSse } from "../helpers/streams.ts";

const SLOW = JSON.stringify(["./test/fixtures/spine-agents.ts:slowAgent"]);
const slowBody = (thread: string, sleepMs: number) => ({
  input: { message: "x" },
  thread_id: thread,
  agent_config: { sleep_ms: sleepMs },
});

/** Send headers announcing a body, never send the body, and resolve with the status. */
function headersOnly(service: RunningService, path: string): Promise<{ status: number; retryAfter: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${service.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json", "content-length": "1000" },
    });
    req.on("response", (res) => {
      let body = "";
      res.on("data", (chunk) => (body += chunk));
      res.on("end", () => {
        req.destroy();
        resolve({ status: res.statusCode!, retryAfter: res.headers["retry-after"] as string | undefined, body });
      });
    });
    req.on("error", reject);
    req.flushHeaders();
  });
}

describe("admission", () => {
  let service: RunningService;
  before(async () => {
    service = await startService({ AGENT_PATHS: SLOW, REQUEST_MAX_CONCURRENT: "2" });
  });
  after(() => service.close());

  test("excess requests get 503 service_busy with Retry-After: 1 before the body is read", async () => {
    const running = [call(service, "POST", "/slow-agent/invoke", slowBody("a", 1500)), call(service, "POST", "/slow-agent/invoke", slowBody("b", 1500))];
    await waitFor(() => service.runtime.admission.activeCount === 2, "both slots taken");
    const refused = await headersOnly(service, "/slow-agent/invoke");
    assert.equal(refused.status, 503);
    assert.equal(refused.retryAfter, "1");
    assert.deepEqual(JSON.parse(refused.body), {
      detail: "The worker is at its concurrent request limit; retry shortly.",
      error_code: "service_busy",
    });
    for (const res of await Promise.all(running)) assert.equal(res.status, 200);
    assert.equal(service.runtime.admission.activeCount, 0);
    // Probes are not subject to admission.
    assert.equal((await fetch(`${service.url}/health/live`)).status, 200);
  });
});

describe("admission queue", () => {
  let service: RunningService;
  before(async () => {
    service = await startService({
      AGENT_PATHS: SLOW,
      REQUEST_MAX_CONCURRENT: "1",
      REQUEST_QUEUE_MAX_WAITERS: "1",
      REQUEST_QUEUE_TIMEOUT: "10",
    });
  });
  after(() => service.close());

  test("a waiter gets the next free slot; beyond the queue, 503", async () => {
    const first = call(service, "POST", "/slow-agent/invoke", slowBody("q1", 800));
    await waitFor(() => service.runtime.admission.activeCount === 1, "the first request in its slot");
    const waiter = call(service, "POST", "/slow-agent/invoke", slowBody("q2", 10));
    await waitFor(() => service.runtime.admission.waitingCount === 1, "the second request queued for a slot");
    const overflow = await call(service, "POST", "/slow-agent/invoke", slowBody("q3", 10));
    assert.equal(overflow.status, 503);
    assert.equal((await first).status, 200);
    assert.equal((await waiter).status, 200);
  });
});

describe("deadline, conversation lock and disconnects", () => {
  let service: RunningService;
  before(async () => {
    service = await startService({ AGENT_PATHS: SLOW, REQUEST_TIMEOUT: "0.6", STREAM_KEEPALIVE_INTERVAL: "0.1" });
  });
  after(() => service.close());

  test("REQUEST_TIMEOUT answers 504 request_timeout and frees the conversation", async () => {
    const started = Date.now();
    const res = await call(service, "POST", "/slow-agent/invoke", slowBody("d1", 5000));
    assert.equal(res.status, 504);
    assert.deepEqual(await res.json(), {
      detail: "The request deadline expired before the run finished.",
      error_code: "request_timeout",
    });
    assert.ok(Date.now() - started < 4000, "the run was aborted, not waited for");
    assert.equal((await call(service, "POST", "/slow-agent/invoke", slowBody("d1", 10))).status, 200);
  });

  test("a deadline after stream headers becomes an error event, without [DONE]", async () => {
    const res = await call(service, "POST", "/slow-agent/stream", slowBody("d2", 5000));
    assert.equal(res.status, 200);
    const sse = parseSse(await res.text());
    assert.equal(sse.done, false);
    assert.deepEqual(sse.events.at(-1), {
      type: "error",
      content: "The request deadline expired before the run finished.",
      error_code: "request_timeout",
    });
    assert.ok(sse.comments.length >= 1, "keep-alive comments while the run was silent");
  });

  test("a second request on a busy conversation gets 409 at once, before any stream header", async () => {
    // The conversation is busy for as long as this test holds its lock: no timing involved.
    const held = await service.runtime.locks.acquire(storageKey("service", "slow-agent", "busy"));
    assert.ok(held.ok);
    for (const route of ["invoke", "stream", "stream/jsonl"]) {
      const res = await call(service, "POST", `/slow-agent/${route}`, slowBody("busy", 10));
      assert.equal(res.status, 409, route);
      assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
      assert.equal(((await res.json()) as { error_code: string }).error_code, "conversation_busy");
    }
    // Another conversation, and the same thread id of another user, are not blocked.
    assert.equal((await call(service, "POST", "/slow-agent/invoke", slowBody("other", 10))).status, 200);
    assert.equal((await call(service, "POST", "/slow-agent/invoke", { ...slowBody("busy", 10), user_id: "ann" })).status, 200);
    await held.lease.release();
    assert.equal((await call(service, "POST", "/slow-agent/invoke", slowBody("busy", 10))).status, 200);
  });

  test("a client that disconnects aborts its run and frees its slot and lock", async () => {
    const controller = new AbortController();
    const res = await fetch(`${service.url}/slow-agent/stream`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}` },
      body: JSON.stringify(slowBody("gone", 300_000)),
      signal: controller.signal,
    });
    assert.equal(res.status, 200);
    controller.abort();
    await waitFor(() => service.runtime.admission.activeCount === 0, "the slot freed");
    assert.equal((await call(service, "POST", "/slow-agent/invoke", slowBody("gone", 10))).status, 200);
  });
});

describe("conversation queue", () => {
  let service: RunningService;
  // The service's own lock, kept here so the test can see who holds the conversation and who waits.
  const lock = new MemoryConversationLock({ waitMs: 600, maxWaiters: 1 });
  before(async () => {
    service = await startService({ AGENT_PATHS: SLOW, THREAD_QUEUE_TIMEOUT: "0.6", THREAD_QUEUE_MAX_WAITERS: "1" }, { locks: () => lock });
  });
  after(() => service.close());

  test("a waiter gets the conversation when it frees; a full queue or an expired wait gets 409", async () => {
    const key = storageKey("service", "slow-agent", "q");
    const first = call(service, "POST", "/slow-agent/invoke", slowBody("q", 300));
    await waitFor(() => lock.state(key).held, "the first request holding the conversation");
    const waiter = call(service, "POST", "/slow-agent/invoke", slowBody("q", 10));
    await waitFor(() => lock.state(key).waiting === 1, "the second request queued for it");
    const full = await call(service, "POST", "/slow-agent/invoke", slowBody("q", 10));
    assert.equal(full.status, 409);
    assert.equal((await first).status, 200);
    assert.equal((await waiter).status, 200);

    await waitFor(() => !lock.state(key).held, "the conversation free again");
    const long = call(service, "POST", "/slow-agent/invoke", slowBody("q", 2000));
    await waitFor(() => lock.state(key).held, "the long request holding the conversation");
    const expired = await call(service, "POST", "/slow-agent/invoke", slowBody("q", 10));
    assert.equal(expired.status, 409);
    assert.equal(((await expired.json()) as { error_code: string }).error_code, "conversation_busy");
    assert.equal((await long).status, 200);
  });
});

describe("body size", () => {
  let service: RunningService;
  before(async () => {
    service = await startService({ REQUEST_MAX_BYTES: "2048" });
  });
  after(() => service.close());

  test("a body over REQUEST_MAX_BYTES gets 413", async () => {
    const res = await call(service, "POST", "/invoke", { input: { message: "x".repeat(4096) } });
    assert.equal(res.status, 413);
    assert.equal(((await res.json()) as { error_code: string }).error_code, "payload_too_large");
    assert.equal((await call(service, "POST", "/invoke", { input: { message: "small" } })).status, 200);
  });
});
