// Every request is bounded in time (issue 11, failures 2 and 3): bodies that never finish, requests
// that never finish their headers, and stream clients that stop reading all end, and give back
// their admission slot and conversation lock.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { call, startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";
import { RawClient, waitFor } from "../helpers/raw-http.ts";
import { parseSse } from "../helpers/streams.ts";

const SLOW = "./test/fixtures/spine-agents.ts:slowAgent";
const SPEW = "./test/fixtures/stream-agents.ts:spewAgent";

function headers(method: string, path: string, extra: Record<string, string | number>): string {
  const lines = [`${method} ${path} HTTP/1.1`, "Host: agenthost", `Authorization: Bearer ${TEST_TOKEN}`, "Content-Type: application/json"];
  for (const [name, value] of Object.entries(extra)) lines.push(`${name}: ${value}`);
  return lines.join("\r\n") + "\r\n\r\n";
}

/** A request with a complete JSON body, as one write. */
function complete(method: string, path: string, body: unknown): string {
  const text = JSON.stringify(body);
  return headers(method, path, { "Content-Length": Buffer.byteLength(text) }) + text;
}

async function counter(service: RunningService, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = service.runtime.metrics.registry.getSingleMetric(name);
  if (!metric) return Number.NaN;
  const { values } = await metric.get();
  const value = values.find((v) => Object.entries(labels).every(([k, want]) => String(v.labels[k as keyof typeof v.labels]) === want));
  return value?.value ?? 0;
}

const TIMEOUT_BODY = { detail: "The request was not received in full within the read timeout.", error_code: "request_body_timeout" };

describe("request body read timeout", () => {
  let service: RunningService;
  before(async () => {
    service = await startService({ AGENT_PATHS: JSON.stringify([SLOW]), REQUEST_MAX_CONCURRENT: "2", REQUEST_BODY_TIMEOUT: "0.5" });
  });
  after(() => service.close());

  test("bodies that never finish are answered 408 request_body_timeout and free their admission slots", async () => {
    const stuck = await Promise.all([RawClient.connect(service.url), RawClient.connect(service.url)]);
    for (const client of stuck) client.write(headers("POST", "/invoke", { "Content-Length": 1000 }) + '{"input": {"mess');
    await waitFor(() => service.runtime.admission.activeCount === 2, "both half-sent requests to hold a slot");
    // The worker is full of requests that will never send their bodies.
    assert.equal((await call(service, "POST", "/invoke", { input: { message: "hi" } })).status, 503);

    for (const client of stuck) {
      const res = await client.response();
      assert.equal(res.status, 408);
      assert.equal(res.headers.connection, "close");
      assert.match(res.headers["content-type"] ?? "", /^application\/json/);
      assert.deepEqual(JSON.parse(res.body), TIMEOUT_BODY);
      await client.closed;
    }
    await waitFor(() => service.runtime.admission.activeCount === 0, "the slots to be released");
    assert.equal((await call(service, "POST", "/invoke", { input: { message: "hi" } })).status, 200);
    const line = service.logs.find((l) => l.msg === "request" && l.status === 408);
    assert.ok(line, "the 408 has its request log line");
  });

  test("an unterminated chunked body is answered 408", async () => {
    const client = await RawClient.connect(service.url);
    client.write(headers("POST", "/invoke", { "Transfer-Encoding": "chunked" }) + "5\r\n{\"inp\r\n");
    const res = await client.response();
    assert.equal(res.status, 408);
    assert.deepEqual(JSON.parse(res.body), TIMEOUT_BODY);
    await client.closed;
    await waitFor(() => service.runtime.admission.activeCount === 0, "the slot to be released");
  });

  test("Transfer-Encoding: chunked on a GET is answered at once, the body ignored and the connection closed", async () => {
    for (const path of ["/info", "/history?thread_id=chunked-get"]) {
      const client = await RawClient.connect(service.url);
      client.write(headers("GET", path, { "Transfer-Encoding": "chunked" }) + "5\r\nhello\r\n");
      const res = await client.response(2_000);
      assert.equal(res.status, 200, path);
      assert.equal(res.headers.connection, "close", path);
      await client.closed;
    }
  });

  test("a request answered before its body arrived (401) is closed once the body never comes", async () => {
    const client = await RawClient.connect(service.url);
    client.write("POST /invoke HTTP/1.1\r\nHost: agenthost\r\nContent-Length: 1000\r\n\r\n{");
    assert.equal((await client.response()).status, 401);
    // Node's request timeout, a little after REQUEST_BODY_TIMEOUT, says so and closes the connection.
    const res = await client.response();
    assert.equal(res.status, 408);
    assert.deepEqual(JSON.parse(res.body), TIMEOUT_BODY);
    await client.closed;
  });

  test("headers that never finish get a JSON 408 and the connection closes", async () => {
    const client = await RawClient.connect(service.url);
    client.write("POST /invoke HTTP/1.1\r\nHost: agenthost\r\nX-Slow: ");
    const res = await client.response();
    assert.equal(res.status, 408);
    assert.deepEqual(JSON.parse(res.body), TIMEOUT_BODY);
    await client.closed;
  });

  test("the body timeout does not cut a stream whose body arrived: it runs past REQUEST_BODY_TIMEOUT", async () => {
    const res = await call(service, "POST", "/slow-agent/stream", { input: { message: "x" }, thread_id: "long", agent_config: { sleep_ms: 1200 } });
    assert.equal(res.status, 200);
    const sse = parseSse(await res.text());
    assert.equal(sse.done, true);
    assert.equal(sse.events.at(-1)?.type, "message");
  });
});

/** A stream request for the spew agent, sent whole from a raw client that then stops reading. */
async function stalledStream(service: RunningService, thread: string, agentConfig: Record<string, number>): Promise<RawClient> {
  const client = await RawClient.connect(service.url);
  client.stopReading();
  client.write(
    complete("POST", "/spew-agent/stream", { input: { message: "go" }, thread_id: thread, stream_tokens: false, recursion_limit: 500, agent_config: agentConfig }),
  );
  return client;
}

describe("streams whose client stops reading: the deadline", () => {
  let service: RunningService;
  before(async () => {
    // A cap far above the output, so only the deadline can end the stream.
    service = await startService({ AGENT_PATHS: JSON.stringify([SPEW]), REQUEST_TIMEOUT: "3", STREAM_MAX_UNSENT_BYTES: String(256 * 1024 * 1024) });
  });
  after(() => service.close());

  test("at REQUEST_TIMEOUT the socket is destroyed and the conversation lock and slot are freed at once", async () => {
    // 24 MiB of output is far more than the loopback socket buffers hold, so the stream backs up;
    // then the run waits (honouring its signal) until the deadline.
    const client = await stalledStream(service, "stalled", { chunks: 48, chunk_bytes: 512 * 1024, sleep_ms: 600_000 });
    await waitFor(async () => (await counter(service, "agenthost_deadline_expiries_total")) === 1, "the deadline to fire");
    await waitFor(() => service.runtime.admission.activeCount === 0, "the slot to be released", 2_000);
    assert.equal(await counter(service, "agenthost_stream_cuts_total", { reason: "deadline" }), 1);
    const next = await call(service, "POST", "/spew-agent/invoke", { input: { message: "again" }, thread_id: "stalled", agent_config: { chunks: 1, chunk_bytes: 10 } });
    assert.equal(next.status, 200, "the conversation is free");
    client.destroy();
  });
});

describe("streams whose client stops reading: the unsent output cap", () => {
  let service: RunningService;
  before(async () => {
    service = await startService({ AGENT_PATHS: JSON.stringify([SPEW]), STREAM_MAX_UNSENT_BYTES: String(1024 * 1024), REQUEST_TIMEOUT: "120" });
  });
  after(() => service.close());

  test("a slow consumer whose unsent output passes STREAM_MAX_UNSENT_BYTES is cut, counted, and frees its lock and slot", async () => {
    const client = await stalledStream(service, "slow", { chunks: 64, chunk_bytes: 256 * 1024, sleep_ms: 600_000 });
    await waitFor(async () => (await counter(service, "agenthost_stream_cuts_total", { reason: "slow_consumer" })) === 1, "the slow consumer to be cut");
    await waitFor(() => service.runtime.admission.activeCount === 0, "the slot to be released", 2_000);
    assert.equal(await counter(service, "agenthost_runs_total", { agent: "spew-agent", outcome: "slow_consumer" }), 1);
    assert.equal(await counter(service, "agenthost_deadline_expiries_total"), 0, "cut long before the deadline");
    const next = await call(service, "POST", "/spew-agent/invoke", { input: { message: "again" }, thread_id: "slow", agent_config: { chunks: 1, chunk_bytes: 10 } });
    assert.equal(next.status, 200, "the conversation is free");
    client.destroy();
  });

  test("a client that keeps reading gets the whole stream, well past the cap in total", async () => {
    const cutsBefore = await counter(service, "agenthost_stream_cuts_total", { reason: "slow_consumer" });
    const res = await call(service, "POST", "/spew-agent/stream", {
      input: { message: "go" },
      thread_id: "reader",
      stream_tokens: false,
      recursion_limit: 500,
      // The gap between chunks lets this process's event loop serve the reading client too.
      agent_config: { chunks: 48, chunk_bytes: 64 * 1024, gap_ms: 2 },
    });
    assert.equal(res.status, 200);
    const sse = parseSse(await res.text());
    assert.equal(sse.done, true);
    assert.equal(sse.events.length, 49);
    assert.equal(await counter(service, "agenthost_stream_cuts_total", { reason: "slow_consumer" }), cutsBefore, "a reading client is never cut");
  });
});
