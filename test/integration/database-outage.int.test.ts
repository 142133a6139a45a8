// PostgreSQL outages through a TCP proxy (never the shared server itself): refused connections,
// reset connections (one of them checked out mid-transaction), dropped packets, and a start while
// the database is down. Every route answers 503 database_unavailable, nothing crashes, nothing
// hangs, and the service recovers by itself.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { eventually } from "../cluster/cluster-helper.ts";
import { dropSchema, uniqueSchema, DATABASE_HOST, DATABASE_PORT } from "../helpers/postgres.ts";
import { call, startService, type RunningService } from "../helpers/service.ts";
import { TcpProxy } from "../helpers/tcp-proxy.ts";

const AGENT = "chatbot-agent";

function envFor(port: number, schema: string): Record<string, string> {
  return {
    MEMORY_BACKEND: "serverdb",
    DATABASE_URL: `postgres://postgres:not-a-secret@127.0.0.1:${port}/test`,
    SERVERDB_SCHEMA: schema,
    // Short bounds keep the dropped-packet cases quick; the defaults are 3 s and 5 s.
    SERVERDB_CONNECT_TIMEOUT: "1",
    SERVERDB_QUERY_TIMEOUT: "1",
  };
}

/** Every route that touches the checkpoint database, as [name, request]. */
function databaseRoutes(thread: string): Array<[string, (service: RunningService) => Promise<Response>]> {
  return [
    ["invoke", (s) => call(s, "POST", `/${AGENT}/invoke`, { input: { message: "hello" }, thread_id: thread })],
    ["stream", (s) => call(s, "POST", `/${AGENT}/stream`, { input: { message: "hello" }, thread_id: thread })],
    ["history", (s) => call(s, "GET", `/${AGENT}/history?thread_id=${thread}`)],
    ["add_messages", (s) => call(s, "POST", `/${AGENT}/history/add_messages`, { thread_id: thread, messages: [{ type: "human", content: "x" }] })],
    ["clear", (s) => call(s, "DELETE", `/${AGENT}/history/clear`, { thread_id: thread })],
    ["resume", (s) => call(s, "POST", `/${AGENT}/resume`, { thread_id: thread, resume: "approve" })],
  ];
}

/** The error of a response: its status and error_code, from the body or a stream's error event. */
async function failureOf(res: Response): Promise<{ status: number; code: unknown }> {
  const text = await res.text();
  if (res.status === 200 && res.headers.get("content-type")?.startsWith("text/event-stream")) {
    const error = text
      .split("\n\n")
      .filter((frame) => frame.startsWith("data: {"))
      .map((frame) => JSON.parse(frame.slice(6)) as { type: string; error_code?: string })
      .find((event) => event.type === "error");
    return { status: error ? 503 : 200, code: error?.error_code };
  }
  return { status: res.status, code: text.startsWith("{") ? (JSON.parse(text) as { error_code?: unknown }).error_code : undefined };
}

async function assertAllUnavailable(service: RunningService, thread: string): Promise<void> {
  for (const [name, send] of databaseRoutes(thread)) {
    const failure = await failureOf(await send(service));
    assert.deepEqual(failure, { status: 503, code: "database_unavailable" }, name);
  }
}

async function readinessChecks(service: RunningService): Promise<string[]> {
  const res = await fetch(`${service.url}/health/ready`);
  return res.status === 200 ? [] : ((await res.json()) as { checks: string[] }).checks;
}

/** No database failure is logged with a stack or any part of the connection string. */
function assertCleanLogs(service: RunningService): void {
  for (const line of service.logs) {
    const text = JSON.stringify(line);
    assert.doesNotMatch(text, /not-a-secret|postgres:\/\//, text);
    if (line.db !== undefined || line.msg === "database unavailable") assert.doesNotMatch(text, /"stack"/, text);
  }
}

async function turns(service: RunningService, thread: string): Promise<number> {
  const res = await call(service, "GET", `/${AGENT}/history?thread_id=${thread}`);
  assert.equal(res.status, 200);
  return ((await res.json()) as { total: number }).total;
}

describe("PostgreSQL outage through a proxy", () => {
  const schema = uniqueSchema("outage");
  const proxy = new TcpProxy(DATABASE_PORT, DATABASE_HOST);
  let service: RunningService;

  before(async () => {
    service = await startService(envFor(await proxy.start(), schema));
  });
  after(async () => {
    await service?.close();
    await proxy.stop();
    await dropSchema(schema);
  });

  test("refused: every database route answers 503 database_unavailable, readiness fails, then both recover", async () => {
    const thread = randomUUID();
    assert.equal((await call(service, "POST", `/${AGENT}/invoke`, { input: { message: "before" }, thread_id: thread })).status, 200);
    await proxy.stop();
    await assertAllUnavailable(service, thread);
    assert.deepEqual(await readinessChecks(service), ["database_unreachable"]);
    assert.equal((await fetch(`${service.url}/health/live`)).status, 200, "liveness is not readiness");

    await proxy.start(proxy.port);
    await eventually(async () => (await readinessChecks(service)).length === 0, 10_000, "ready again");
    assert.equal((await call(service, "POST", `/${AGENT}/invoke`, { input: { message: "after" }, thread_id: thread })).status, 200);
    // Both acknowledged turns are there: 2 messages each.
    assert.equal(await turns(service, thread), 4);
    assertCleanLogs(service);
  });

  test("a connection reset while a client is checked out mid-transaction is a 503, not a crash", async () => {
    const thread = randomUUID();
    assert.equal((await call(service, "POST", `/${AGENT}/invoke`, { input: { message: "keep me" }, thread_id: thread })).status, 200);
    // clear runs BEGIN on a checked-out client (PostgresSaver.deleteThread): hold it there, then cut it.
    proxy.blackhole();
    const held = proxy.heldBytes;
    const clearing = call(service, "DELETE", `/${AGENT}/history/clear`, { thread_id: thread });
    await eventually(() => proxy.heldBytes > held, 10_000, "the clear reached the database");
    proxy.reset();
    proxy.restore();
    assert.deepEqual(await failureOf(await clearing), { status: 503, code: "database_unavailable" });
    // The process is still here and serving; the conversation was not cleared.
    assert.equal(await turns(service, thread), 2);
    assertCleanLogs(service);
  });

  test("dropped packets: every route is answered 503 within the timeouts, not hung, and recovers on restore", async () => {
    const thread = randomUUID();
    assert.equal((await call(service, "POST", `/${AGENT}/invoke`, { input: { message: "before" }, thread_id: thread })).status, 200);
    proxy.blackhole();
    const started = performance.now();
    await assertAllUnavailable(service, thread);
    const perRoute = (performance.now() - started) / databaseRoutes(thread).length;
    assert.ok((await readinessChecks(service)).includes("database_unreachable"));

    proxy.restore();
    const restored = performance.now();
    await eventually(
      async () => (await call(service, "POST", `/${AGENT}/invoke`, { input: { message: "after" }, thread_id: thread })).status === 200,
      15_000,
      "a run succeeds after the restore",
      50,
    );
    const recovery = performance.now() - restored;
    console.log(`dropped packets: ${Math.round(perRoute)} ms per 503; first success ${Math.round(recovery)} ms after restore`);
    assert.equal(await turns(service, thread), 4);
    assertCleanLogs(service);
  });
});

describe("a worker that starts while PostgreSQL is down", () => {
  const schema = uniqueSchema("late");
  const proxy = new TcpProxy(DATABASE_PORT, DATABASE_HOST);
  let service: RunningService;

  after(async () => {
    await service?.close();
    await proxy.stop();
    await dropSchema(schema);
  });

  test("starts not ready, answers 503, and sets the database up by itself once it is reachable", async () => {
    const port = await proxy.start();
    await proxy.stop();
    service = await startService(envFor(port, schema));
    assert.deepEqual(await readinessChecks(service), ["database_unreachable"]);
    assert.equal(service.runtime.checkpoints.isReady(), false);
    await assertAllUnavailable(service, randomUUID());
    assert.ok(service.logs.some((l) => l.msg === "checkpoint database unavailable; readiness fails until it is set up"));

    await proxy.start(port);
    await eventually(async () => (await readinessChecks(service)).length === 0, 10_000, "ready once the database is reachable");
    assert.ok(service.logs.some((l) => l.msg === "checkpoint database ready"));
    const thread = randomUUID();
    assert.equal((await call(service, "POST", `/${AGENT}/invoke`, { input: { message: "hi" }, thread_id: thread })).status, 200);
    assert.equal(await turns(service, thread), 2);
    assertCleanLogs(service);
  });
});
