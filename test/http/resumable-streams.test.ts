// Issue 29 items 3, 7 and 8 in one process (the record in its memory): a resumable run's record is
// bounded per run, per user and in total, and a resume past a bound gets an error event saying the
// events are no longer kept while the live stream goes on whole; a resumable run is ended like every
// run (its span exported, its duration counted); a resume from the end of an ended run ends at once.
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { entryBytes } from "../../src/coordination/run-events/record-budget.ts";
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "../helpers/otlp-receiver.ts";
import { waitFor } from "../helpers/raw-http.ts";
import { eventsOf, parseSseFrames, type SseFrame } from "../helpers/run-streams.ts";
import { startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";

const STEPS = "./test/fixtures/run-control-agents.ts:stepsAgent";
const SPEW = "./test/fixtures/stream-agents.ts:spewAgent";
const users = { alice: "alice-token-0123456789", bob: "bob-token-0123456789" };
const KIB = 1024;
/** What one spew message of `bytes` characters counts for in a record (its JSON is a little longer). */
const chunk = (bytes: number) => entryBytes(bytes + 400);

/** A resumable SSE stream read to its end. */
async function streamed(service: RunningService, agent: string, body: Record<string, unknown>, token = TEST_TOKEN): Promise<{ runId: string; frames: SseFrame[] }> {
  const res = await fetch(`${service.url}/${agent}/stream`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ input: { message: "go" }, stream_tokens: false, stream_resumable: true, ...body }),
  });
  assert.equal(res.status, 200);
  return { runId: res.headers.get("x-run-id")!, frames: parseSseFrames(await res.text()) };
}

/**
 * A resume of `runId` from `lastEventId`: its status and frames. Bounded at 5 s: a resume that does
 * not end by itself (the defect of item 8) fails the test instead of hanging it.
 */
async function resumed(service: RunningService, agent: string, runId: string, thread: string, lastEventId: number, token = TEST_TOKEN) {
  const res = await fetch(`${service.url}/${agent}/runs/${runId}/stream?thread_id=${thread}`, {
    headers: { authorization: `Bearer ${token}`, "last-event-id": String(lastEventId) },
    signal: AbortSignal.timeout(5_000),
  });
  const text = await res.text();
  return { status: res.status, frames: res.status === 200 ? parseSseFrames(text) : [] };
}

const notKept = (frames: SseFrame[]) => {
  assert.equal(frames.length, 1, JSON.stringify(frames).slice(0, 500));
  assert.equal(frames[0]!.id, undefined, "the error event carries no position");
  const [event] = eventsOf(frames);
  assert.equal(event!.type, "error");
  assert.equal(event!.error_code, "run_events_not_found");
  assert.match(String(event!.content), /no longer kept/);
};

describe("resumable streams' records are bounded", () => {
  let service: RunningService;
  before(async () => {
    service = await startService({
      AGENT_PATHS: JSON.stringify([STEPS, SPEW]),
      AUTH_MODE: "token",
      AUTH_SECRET: TEST_TOKEN,
      AUTH_USERS: JSON.stringify(users),
      // A run keeps at most two 64 KiB messages, a user five, the process eight.
      STREAM_RESUME_MAX_RUN_BYTES: String(2 * chunk(64 * KIB) + 4 * KIB),
      STREAM_RESUME_MAX_USER_BYTES: String(5 * chunk(64 * KIB)),
      STREAM_RESUME_MAX_BYTES: String(8 * chunk(64 * KIB)),
    });
  });
  after(() => service.close());

  test("a run past its bound streams on whole to [DONE]; a resume gets an error event: its events are no longer kept", async () => {
    const thread = randomUUID();
    const live = await streamed(service, "spew-agent", { thread_id: thread, agent_config: { chunks: 4, chunk_bytes: 64 * KIB } });
    assert.equal(live.frames.at(-1)!.data, "[DONE]", "the live stream is not cut by its record's bound");
    const events = eventsOf(live.frames);
    assert.equal(events.length, 5);
    assert.deepEqual(live.frames.slice(0, -1).map((frame) => frame.id), [1, 2, 3, 4, 5]);
    assert.equal((events[3]!.content as { content: string }).content.length, 64 * KIB);

    for (const position of [0, 1, 5]) notKept((await resumed(service, "spew-agent", live.runId, thread, position)).frames);
    const jsonl = await fetch(`${service.url}/spew-agent/runs/${live.runId}/stream/jsonl?thread_id=${thread}&after=2`, {
      headers: { authorization: `Bearer ${TEST_TOKEN}` },
      signal: AbortSignal.timeout(5_000),
    });
    const lines = (await jsonl.text()).trim().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.error_code, "run_events_not_found");
    assert.equal(lines[0]!.seq, undefined);

    // A run within its bound is kept whole.
    const other = randomUUID();
    const small = await streamed(service, "spew-agent", { thread_id: other, agent_config: { chunks: 1, chunk_bytes: 64 * KIB } });
    const again = await resumed(service, "spew-agent", small.runId, other, 0);
    assert.deepEqual(again.frames, small.frames);
  });

  test("one user's flood pushes out only that user's own oldest records; another user's stay whole", async () => {
    const bobThread = randomUUID();
    const bob = await streamed(service, "spew-agent", { thread_id: bobThread, agent_config: { chunks: 2, chunk_bytes: 64 * KIB } }, users.bob);
    assert.equal(bob.frames.at(-1)!.data, "[DONE]");

    // Each run on a thread of its own (the spew agent counts its messages in the conversation).
    const alice: Array<{ runId: string; thread: string }> = [];
    for (let i = 0; i < 12; i++) {
      const thread = randomUUID();
      const run = await streamed(service, "spew-agent", { thread_id: thread, agent_config: { chunks: 2, chunk_bytes: 64 * KIB } }, users.alice);
      assert.equal(run.frames.at(-1)!.data, "[DONE]");
      alice.push({ runId: run.runId, thread });
    }
    // Her user bound holds two of her runs: the newest two are whole, the rest are no longer kept.
    for (const { runId, thread } of alice.slice(-2)) {
      const { frames } = await resumed(service, "spew-agent", runId, thread, 0, users.alice);
      assert.equal(frames.at(-1)!.data, "[DONE]");
      assert.equal(frames.length, 4);
    }
    for (const { runId, thread } of alice.slice(0, -2)) notKept((await resumed(service, "spew-agent", runId, thread, 0, users.alice)).frames);
    const bobs = await resumed(service, "spew-agent", bob.runId, bobThread, 0, users.bob);
    assert.deepEqual(bobs.frames, bob.frames, "bob's run is whole");
    // Another user still finds nothing of either.
    assert.equal((await resumed(service, "spew-agent", alice[0]!.runId, alice[0]!.thread, 0, users.bob)).status, 404);
  });
});

describe("a resume from the end of an ended run", () => {
  let service: RunningService;
  before(async () => {
    service = await startService({ AGENT_PATHS: JSON.stringify([STEPS]), STREAM_RESUME_TTL: "600" });
  });
  after(() => service.close());

  test("at its last event: the end at once ([DONE] after a clean end); past it: an error event; JSON Lines alike", async () => {
    const thread = randomUUID();
    const live = await streamed(service, "steps-agent", { thread_id: thread, agent_config: { steps: 2 } });
    assert.deepEqual(live.frames.map((frame) => frame.id), [1, 2, 3, undefined]);
    const atEnd = await resumed(service, "steps-agent", live.runId, thread, 3);
    assert.equal(atEnd.status, 200);
    assert.deepEqual(atEnd.frames, [{ id: undefined, data: "[DONE]" }]);

    for (const position of [4, 99]) {
      const past = await resumed(service, "steps-agent", live.runId, thread, position);
      assert.equal(past.frames.length, 1);
      const [event] = eventsOf(past.frames);
      assert.equal(event!.error_code, "validation_failed");
      assert.match(String(event!.content), new RegExp(`${position} is past the last event of this run \\(3\\)`));
    }

    const jsonl = await fetch(`${service.url}/steps-agent/runs/${live.runId}/stream/jsonl?thread_id=${thread}&after=3`, {
      headers: { authorization: `Bearer ${TEST_TOKEN}` },
      signal: AbortSignal.timeout(5_000),
    });
    assert.equal(jsonl.status, 200);
    assert.equal(await jsonl.text(), "");
  });

  test("a failed run: from its error event, the stream ends at once with nothing more", async () => {
    const thread = randomUUID();
    const body = { input: { message: "go" }, thread_id: thread, stream_tokens: false, stream_resumable: true, agent_config: { steps: 1, sleep_ms: 60_000 } };
    const res = await fetch(`${service.url}/steps-agent/stream`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const runId = res.headers.get("x-run-id")!;
    await waitFor(() => service.runtime.activeRuns.size === 1, "the run under way");
    const cancel = await fetch(`${service.url}/steps-agent/cancel`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ thread_id: thread }),
    });
    assert.equal(((await cancel.json()) as { cancelled: boolean }).cancelled, true);
    const frames = parseSseFrames(await res.text());
    const last = frames.at(-1)!;
    assert.equal(eventsOf([last])[0]!.error_code, "run_cancelled");
    const after = await resumed(service, "steps-agent", runId, thread, last.id!);
    assert.deepEqual(after, { status: 200, frames: [] });
  });
});

describe("a resumable run is ended like every run", () => {
  let receiver: OtlpReceiver;
  let service: RunningService;
  before(async () => {
    receiver = await startOtlpReceiver();
    service = await startService({
      AGENT_PATHS: JSON.stringify([STEPS]),
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    });
  });
  after(async () => {
    await service.close();
    await receiver.close();
  });

  async function durationCount(outcome: string): Promise<number> {
    const json = await service.runtime.metrics.registry.getMetricsAsJSON();
    const metric = json.find((m) => m.name === "agenthost_run_duration_seconds");
    const values = (metric?.values ?? []) as Array<{ metricName?: string; labels: Record<string, unknown>; value: number }>;
    return values.find((v) => v.metricName === "agenthost_run_duration_seconds_count" && v.labels.agent === "steps-agent" && v.labels.outcome === outcome)?.value ?? 0;
  }

  test("its run span is exported with its outcome, the parent of its children, and its duration is counted", async () => {
    const before = await durationCount("ok");
    const thread = randomUUID();
    const live = await streamed(service, "steps-agent", { thread_id: thread, agent_config: { steps: 2 } });
    assert.equal(live.frames.at(-1)!.data, "[DONE]");

    let run: ReceivedSpan | undefined;
    await waitFor(async () => {
      const exported = receiver.nextExport();
      await service.runtime.tracing!.flush();
      run = receiver.spans.find((s) => s.name === "invoke_agent steps-agent" && s.attributes["agenthost.run_id"] === live.runId);
      if (!run) await Promise.race([exported, new Promise((resolve) => setImmediate(resolve))]);
      return run !== undefined;
    }, "the resumable run's span");
    assert.equal(run!.attributes["agenthost.outcome"], "ok");
    const checkpoints = receiver.spans.filter((s) => s.traceId === run!.traceId && s.name.startsWith("checkpoint "));
    assert.ok(checkpoints.length > 0);
    for (const span of checkpoints) assert.equal(span.parentSpanId, run!.spanId, "the run's children hang under it");
    assert.equal(await durationCount("ok"), before + 1);
  });
});
