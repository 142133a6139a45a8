// Issue 29 item 10: HTTP/1.1 pipelining. Node parses every request a client sends ahead on one
// connection at once; the service takes them one at a time, so a connection holds at most one
// worker slot, and its requests are answered in order instead of refused with 503.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { gate } from "../fixtures/gated-agent.ts";
import { RawClient, waitFor } from "../helpers/raw-http.ts";
import { startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";

const AGENTS = JSON.stringify(["./test/fixtures/gated-agent.ts:gatedAgent"]);

function get(path: string, requestId: string): string {
  return `GET ${path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${TEST_TOKEN}\r\nX-Request-Id: ${requestId}\r\n\r\n`;
}

function post(path: string, body: unknown, requestId: string): string {
  const json = JSON.stringify(body);
  return (
    `POST ${path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${TEST_TOKEN}\r\nX-Request-Id: ${requestId}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`
  );
}

async function activeRequests(service: RunningService): Promise<number> {
  return (await service.runtime.metrics.activeRequests.get()).values[0]?.value ?? 0;
}

test("20 pipelined GETs on one connection are all answered 200, in order, by a worker with one slot", async () => {
  // One slot and no queue: a request that found the slot taken, by its own connection's previous
  // request included, would be refused with 503.
  const service = await startService({ REQUEST_MAX_CONCURRENT: "1", REQUEST_QUEUE_MAX_WAITERS: "0" });
  const client = await RawClient.connect(service.url);
  try {
    const paths = ["/info", "/threads", "/chatbot-agent/threads?limit=1"];
    const ids = Array.from({ length: 20 }, (_, i) => `pipelined-${i}`);
    client.write(ids.map((id, i) => get(paths[i % paths.length]!, id)).join(""));
    for (const id of ids) {
      const res = await client.response();
      assert.equal(res.status, 200, `${id}: ${res.status} ${res.body}`);
      assert.equal(res.headers["x-request-id"], id);
    }
    await waitFor(() => service.runtime.admission.activeCount === 0, "the slot released");
  } finally {
    client.destroy();
    await service.close();
  }
});

describe("pipelined requests behind a run", () => {
  let service: RunningService;
  before(async () => {
    service = await startService({ AGENT_PATHS: AGENTS, REQUEST_MAX_CONCURRENT: "2" });
  });
  after(() => service.close());

  test("a connection holds one slot at a time: its queued requests leave the others to other connections", async () => {
    const client = await RawClient.connect(service.url);
    try {
      const ids = Array.from({ length: 10 }, (_, i) => `behind-run-${i}`);
      client.write(post("/gated-agent/invoke", { input: { message: "hold" } }, "run") + ids.map((id) => get("/info", id)).join(""));
      await waitFor(() => gate.waiting === 1, "the run waiting at the gate");
      // The run holds one slot; its pipelined GETs hold none, so another connection is served.
      assert.equal(service.runtime.admission.activeCount, 1);
      const other = await fetch(`${service.url}/info`, { headers: { authorization: `Bearer ${TEST_TOKEN}` } });
      assert.equal(other.status, 200);
      gate.open();
      const first = await client.response();
      assert.equal(first.status, 200, first.body);
      assert.equal(first.headers["x-request-id"], "run");
      for (const id of ids) {
        const res = await client.response();
        assert.equal(res.status, 200, `${id}: ${res.status} ${res.body}`);
        assert.equal(res.headers["x-request-id"], id);
      }
      await waitFor(() => service.runtime.admission.activeCount === 0, "every slot released");
    } finally {
      client.destroy();
    }
  });

  test("a client that leaves with requests still queued leaves no slot or request behind", async () => {
    const client = await RawClient.connect(service.url);
    client.write(post("/gated-agent/invoke", { input: { message: "hold" } }, "run") + [1, 2, 3].map((i) => get("/info", `queued-${i}`)).join(""));
    await waitFor(() => gate.waiting === 1, "the run waiting at the gate");
    client.destroy();
    await waitFor(
      async () => gate.waiting === 0 && service.runtime.admission.activeCount === 0 && (await activeRequests(service)) === 0,
      "the run stopped, its slot freed, no request in progress",
    );
    // The worker serves the next connection at once.
    const next = await fetch(`${service.url}/info`, { headers: { authorization: `Bearer ${TEST_TOKEN}` } });
    assert.equal(next.status, 200);
  });
});
