// Stopping a run (POST /cancel) and resuming a dropped resumable stream (GET /runs/{run_id}/stream)
// in one process: the run id header, what a cancelled invoke and stream answer, completed steps kept,
// the lock free at once, owner-only access, replay after a dropped connection, and expiry.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { call, startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";
import { parseSse } from "../helpers/streams.ts";
import { RawClient, waitFor } from "../helpers/raw-http.ts";
import { eventsOf, parseSseFrames, readUntil } from "../helpers/run-streams.ts";

const AGENTS = JSON.stringify(["./test/fixtures/run-control-agents.ts:stepsAgent"]);
const users = { alice: "alice-token-0123456789", bob: "bob-token-0123456789" };

/** A run that takes `steps` steps and then waits `sleep_ms` (long: until it is cancelled). */
const waiting = (thread: string, extra: Record<string, unknown> = {}) => ({
  input: { message: "go" },
  thread_id: thread,
  agent_config: { steps: 2, sleep_ms: 60_000 },
  ...extra,
});

async function historyOf(service: RunningService, thread: string, token: string): Promise<string[]> {
  const res = await call(service, "GET", `/steps-agent/history?thread_id=${thread}`, undefined, token);
  const page = (await res.json()) as { messages: Array<{ content: unknown }> };
  return page.messages.map((message) => String(message.content));
}

describe("run control", () => {
  let service: RunningService;
  before(async () => {
    service = await startService({
      AGENT_PATHS: AGENTS,
      AUTH_MODE: "token",
      AUTH_SECRET: TEST_TOKEN,
      AUTH_USERS: JSON.stringify(users),
      STREAM_RESUME_TTL: "1",
    });
  });
  after(() => service.close());

  test("every run answer names its run in X-Run-Id", async () => {
    const invoked = await call(service, "POST", "/steps-agent/invoke", { input: { message: "hi" }, agent_config: { steps: 1 } }, users.alice);
    assert.equal(invoked.status, 200);
    const message = (await invoked.json()) as { run_id: string };
    assert.equal(invoked.headers.get("x-run-id"), message.run_id);

    const streamed = await call(service, "POST", "/steps-agent/stream", { input: { message: "hi" }, agent_config: { steps: 1 } }, users.alice);
    const runId = streamed.headers.get("x-run-id");
    const { events, done } = parseSse(await streamed.text());
    assert.ok(done);
    assert.ok(runId);
    assert.ok(events.every((event) => event.type !== "message" || (event.content as { run_id: string }).run_id === runId));
  });

  test("cancel stops a running invoke: 409 run_cancelled, completed steps kept, the conversation free at once", async () => {
    const running = call(service, "POST", "/steps-agent/invoke", waiting("inv-1"), users.alice);
    await waitFor(async () => (await historyOf(service, "inv-1", users.alice)).length === 3, "the two steps checkpointed");

    const cancel = await call(service, "POST", "/steps-agent/cancel", { thread_id: "inv-1" }, users.alice);
    assert.equal(cancel.status, 200);
    const answer = (await cancel.json()) as { thread_id: string; cancelled: boolean; run_id: string };
    assert.equal(answer.thread_id, "inv-1");
    assert.equal(answer.cancelled, true);

    const stopped = await running;
    assert.equal(stopped.status, 409);
    assert.equal(stopped.headers.get("x-run-id"), answer.run_id);
    assert.equal(((await stopped.json()) as { error_code: string }).error_code, "run_cancelled");
    assert.deepEqual(await historyOf(service, "inv-1", users.alice), ["go", "step 1", "step 2"]);

    // THREAD_QUEUE_TIMEOUT is 0: a held conversation would answer 409 conversation_busy.
    const next = await call(service, "POST", "/steps-agent/invoke", { input: { message: "again" }, thread_id: "inv-1", agent_config: { steps: 1 } }, users.alice);
    assert.equal(next.status, 200);
  });

  test("cancel with nothing running answers cancelled: false", async () => {
    const res = await call(service, "POST", "/steps-agent/cancel", { thread_id: "idle" }, users.alice);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { thread_id: "idle", cancelled: false, run_id: null });
  });

  test("a cancelled stream ends with an error event run_cancelled and no [DONE]", async () => {
    const res = await call(service, "POST", "/steps-agent/stream", waiting("str-1", { stream_tokens: false }), users.alice);
    const runId = res.headers.get("x-run-id");
    await waitFor(async () => (await historyOf(service, "str-1", users.alice)).length === 3, "the two steps checkpointed");
    const cancel = (await (await call(service, "POST", "/steps-agent/cancel", { thread_id: "str-1" }, users.alice)).json()) as { run_id: string };
    assert.equal(cancel.run_id, runId);
    const { events, done } = parseSse(await res.text());
    assert.equal(done, false);
    const last = events.at(-1)!;
    assert.equal(last.type, "error");
    assert.equal(last.error_code, "run_cancelled");
    assert.deepEqual(
      events.filter((event) => event.type === "message").map((event) => (event.content as { content: string }).content),
      ["step 1", "step 2"],
    );
  });

  test("only the conversation's owner reaches its run", async () => {
    const running = call(service, "POST", "/steps-agent/invoke", waiting("own-1"), users.alice);
    await waitFor(async () => (await historyOf(service, "own-1", users.alice)).length === 3, "the run under way");
    // Bob's own thread of that name is another conversation: nothing runs there.
    const bob = (await (await call(service, "POST", "/steps-agent/cancel", { thread_id: "own-1" }, users.bob)).json()) as { cancelled: boolean };
    assert.equal(bob.cancelled, false);
    const forbidden = await call(service, "POST", "/steps-agent/cancel", { thread_id: "own-1", user_id: "alice" }, users.bob);
    assert.equal(forbidden.status, 403);
    assert.equal(((await forbidden.json()) as { error_code: string }).error_code, "forbidden_user");
    const own = (await (await call(service, "POST", "/steps-agent/cancel", { thread_id: "own-1" }, users.alice)).json()) as { cancelled: boolean };
    assert.equal(own.cancelled, true);
    assert.equal((await running).status, 409);
  });

  test("cancel refuses a body without thread_id", async () => {
    const res = await call(service, "POST", "/steps-agent/cancel", {}, users.alice);
    assert.equal(res.status, 422);
    assert.equal(((await res.json()) as { error_code: string }).error_code, "validation_failed");
  });

  test("a resumable stream goes on after its client leaves; Last-Event-ID replays the rest and [DONE] once", async () => {
    const abort = new AbortController();
    const res = await fetch(`${service.url}/steps-agent/stream`, {
      method: "POST",
      headers: { authorization: `Bearer ${users.alice}`, "content-type": "application/json" },
      body: JSON.stringify({ input: { message: "go" }, thread_id: "res-1", stream_tokens: false, stream_resumable: true, agent_config: { steps: 3, gap_ms: 30, sleep_ms: 300 } }),
      signal: abort.signal,
    });
    const runId = res.headers.get("x-run-id")!;
    const first = parseSseFrames(await readUntil(res, abort, (text) => parseSseFrames(text).length >= 1));
    assert.equal(first[0]!.id, 1);
    // The run finishes without its client.
    await waitFor(async () => (await historyOf(service, "res-1", users.alice)).at(-1) === "finished", "the run to finish");

    const lastId = first.at(-1)!.id!;
    const resumed = await fetch(`${service.url}/steps-agent/runs/${runId}/stream?thread_id=res-1`, {
      headers: { authorization: `Bearer ${users.alice}`, "last-event-id": String(lastId) },
    });
    assert.equal(resumed.status, 200);
    const rest = parseSseFrames(await resumed.text());
    assert.equal(rest.filter((frame) => frame.data === "[DONE]").length, 1);
    assert.equal(rest.at(-1)!.data, "[DONE]");
    const all = [...first, ...rest].filter((frame) => frame.data !== "[DONE]");
    assert.deepEqual(all.map((frame) => frame.id), all.map((_frame, index) => index + 1), "ids run 1, 2, … without gaps or repeats");
    assert.deepEqual(
      eventsOf(all).map((event) => (event.content as { content: string }).content),
      ["step 1", "step 2", "step 3", "finished"],
    );

    // JSON Lines: the same events with their seq, after `after`.
    const lines = await fetch(`${service.url}/steps-agent/runs/${runId}/stream/jsonl?thread_id=res-1&after=2`, {
      headers: { authorization: `Bearer ${users.alice}` },
    });
    const parsed = (await lines.text()).trim().split("\n").map((line) => JSON.parse(line) as { seq: number; type: string });
    assert.deepEqual(parsed.map((line) => line.seq), [3, 4]);

    // Only the owner: bob (even naming the thread) finds nothing; naming alice is refused.
    const bob = await fetch(`${service.url}/steps-agent/runs/${runId}/stream?thread_id=res-1`, { headers: { authorization: `Bearer ${users.bob}` } });
    assert.equal(bob.status, 404);
    assert.equal(((await bob.json()) as { error_code: string }).error_code, "run_events_not_found");
    const named = await fetch(`${service.url}/steps-agent/runs/${runId}/stream?thread_id=res-1&user_id=alice`, { headers: { authorization: `Bearer ${users.bob}` } });
    assert.equal(named.status, 403);

    // STREAM_RESUME_TTL=1: the events are gone a second after the run ended.
    await waitFor(
      async () => (await fetch(`${service.url}/steps-agent/runs/${runId}/stream?thread_id=res-1`, { headers: { authorization: `Bearer ${users.alice}` } })).status === 404,
      "the events to expire",
      5_000,
    );
  });

  test("a bad Last-Event-ID is refused; a stream without the flag has no ids", async () => {
    const res = await fetch(`${service.url}/steps-agent/runs/nope/stream?thread_id=x`, { headers: { authorization: `Bearer ${users.alice}`, "last-event-id": "abc" } });
    assert.equal(res.status, 422);
    const plain = await call(service, "POST", "/steps-agent/stream", { input: { message: "hi" }, agent_config: { steps: 1 } }, users.alice);
    assert.ok(parseSseFrames(await plain.text()).every((frame) => frame.id === undefined));
  });
});

describe("a resumable run without its client", () => {
  let service: RunningService;
  before(async () => {
    service = await startService({ AGENT_PATHS: AGENTS, REQUEST_TIMEOUT: "1", REQUEST_MAX_CONCURRENT: "1" });
  });
  after(() => service.close());

  test("keeps its worker slot and stops at REQUEST_TIMEOUT; the resume reports request_timeout", async () => {
    const abort = new AbortController();
    const res = await fetch(`${service.url}/steps-agent/stream`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ input: { message: "go" }, thread_id: "late", stream_tokens: false, stream_resumable: true, agent_config: { steps: 2, sleep_ms: 60_000 } }),
      signal: abort.signal,
    });
    const runId = res.headers.get("x-run-id")!;
    await readUntil(res, abort, (text) => parseSseFrames(text).length >= 1);
    // The run goes on without its client, holding the one slot: another request is refused.
    await waitFor(() => service.runtime.activeRuns.size === 1, "the run still active");
    const busy = await call(service, "GET", "/info");
    assert.equal(busy.status, 503);
    assert.equal(((await busy.json()) as { error_code: string }).error_code, "service_busy");

    await waitFor(() => service.runtime.activeRuns.size === 0, "the deadline to stop the run", 5_000);
    const resumed = await fetch(`${service.url}/steps-agent/runs/${runId}/stream?thread_id=late`, {
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "last-event-id": "1" },
    });
    const frames = parseSseFrames(await resumed.text());
    // "step 2" (held back while it might have been the final answer), then the error event; no [DONE].
    assert.deepEqual(frames.map((frame) => frame.id), [2, 3]);
    assert.equal(eventsOf(frames)[1]!.error_code, "request_timeout");
  });
});

describe("cancel on a full worker", () => {
  let service: RunningService;
  before(async () => {
    // One slot, no queue: a second ordinary request is refused at once.
    service = await startService({ AGENT_PATHS: AGENTS, REQUEST_MAX_CONCURRENT: "1", REQUEST_MAX_BYTES: "65536" });
  });
  after(() => service.close());

  test("a cancel gets through while a run holds the only slot; the run ends 409 run_cancelled", async () => {
    const running = call(service, "POST", "/steps-agent/invoke", waiting("full-1"));
    await waitFor(() => service.runtime.activeRuns.size === 1, "the run holding the conversation");
    const busy = await call(service, "GET", "/steps-agent/history?thread_id=full-1");
    assert.equal(busy.status, 503, "the run holds the worker's only slot");
    assert.equal(((await busy.json()) as { error_code: string }).error_code, "service_busy");

    const cancel = await call(service, "POST", "/steps-agent/cancel", { thread_id: "full-1" });
    assert.equal(cancel.status, 200);
    const answer = (await cancel.json()) as { cancelled: boolean; run_id: string };
    assert.equal(answer.cancelled, true);
    const stopped = await running;
    assert.equal(stopped.status, 409);
    assert.equal(stopped.headers.get("x-run-id"), answer.run_id);
    assert.equal(((await stopped.json()) as { error_code: string }).error_code, "run_cancelled");

    // The reserve's slot is back and the run's slot too; a cancel still passes auth and body limits.
    assert.equal(service.runtime.controlAdmission.activeCount, 0);
    const history = await call(service, "GET", "/steps-agent/history?thread_id=full-1");
    assert.equal(history.status, 200);
    const unauthenticated = await fetch(`${service.url}/steps-agent/cancel`, { method: "POST", body: JSON.stringify({ thread_id: "full-1" }) });
    assert.equal(unauthenticated.status, 401);
    const huge = await call(service, "POST", "/steps-agent/cancel", { thread_id: "full-1", padding: "x".repeat(100_000) });
    assert.equal(huge.status, 413);
    // A cancel's body is small: beyond 16 KiB it is refused, whatever REQUEST_MAX_BYTES allows.
    const large = await call(service, "POST", "/steps-agent/cancel", { thread_id: "full-1", padding: "x".repeat(20_000) });
    assert.equal(large.status, 413);
  });

  test("cancels whose bodies never finish arriving hold no slot of the reserve", async () => {
    const inFlight = async () => (await service.runtime.metrics.activeRequests.get()).values[0]?.value ?? 0;
    const before = await inFlight();
    const stalled = await Promise.all(Array.from({ length: 12 }, () => RawClient.connect(service.url)));
    for (const client of stalled) {
      client.write(
        `POST /steps-agent/cancel HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TEST_TOKEN}\r\n` +
          'Content-Type: application/json\r\nContent-Length: 40\r\n\r\n{"thread_id":',
      );
    }
    await waitFor(async () => (await inFlight()) === before + 12, "the twelve half-sent cancels received");
    assert.equal(service.runtime.controlAdmission.activeCount, 0);

    const cancel = await call(service, "POST", "/steps-agent/cancel", { thread_id: "full-2" });
    assert.equal(cancel.status, 200);
    assert.deepEqual(await cancel.json(), { thread_id: "full-2", cancelled: false, run_id: null });
    for (const client of stalled) client.destroy();
    await waitFor(async () => (await inFlight()) === before, "the stalled connections gone");
  });
});
