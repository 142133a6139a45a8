// Cancel and resume across the workers of one host (two workers, SQLite, no Redis): a cancel that
// reaches the run's worker through the primary, and a resumable stream cut by a TCP proxy and
// resumed on the other worker from the primary's record of its events; the primary's record bounded
// (issue 29 item 3) and a resume from the end of an ended run ending at once (item 8).
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { parseSseFrames } from "../helpers/run-streams.ts";
import { closePinned, eventually, pinnedConnections, request, startCluster, type Cluster, type PinnedConnection } from "./cluster-helper.ts";
import { messagesOf, STEPS_AGENT, streamThenCut } from "./run-control-helper.ts";

describe("cancel and resume across the workers of one host", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "agenthost-run-control-"));
  let cluster: Cluster;
  let pinned: PinnedConnection[][];
  before(async () => {
    cluster = await startCluster({
      MEMORY_BACKEND: "filedb",
      SQLITE_PATH: path.join(dir, "checkpoints.sqlite"),
      AGENT_PATHS: JSON.stringify([STEPS_AGENT, "./test/fixtures/stream-agents.ts:spewAgent"]),
      // The primary keeps at most 256 KiB of a run's events.
      STREAM_RESUME_MAX_RUN_BYTES: String(256 * 1024),
    });
    pinned = await pinnedConnections(cluster, 2, 1);
  });
  after(async () => {
    closePinned(pinned ?? []);
    await cluster?.stop("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  test("a cancel sent to one worker stops the run on the other; the conversation is free at once", async () => {
    const [[onA], [onB]] = pinned as [[PinnedConnection], [PinnedConnection]];
    const thread = randomUUID();
    const body = { input: { message: "go" }, thread_id: thread, agent_config: { steps: 2, sleep_ms: 60_000 } };
    const running = request(cluster.url, "POST", "/steps-agent/invoke", body, {}, onA.agent);
    await eventually(async () => (await messagesOf(cluster.url, thread)).length === 3, 10_000, "the run's two steps checkpointed");

    const cancel = await request(cluster.url, "POST", "/steps-agent/cancel", { thread_id: thread }, {}, onB.agent);
    assert.equal(cancel.status, 200, cancel.body);
    const answer = cancel.json<{ cancelled: boolean; run_id: string }>();
    assert.equal(answer.cancelled, true);

    const stopped = await running;
    assert.equal(stopped.status, 409);
    assert.equal(stopped.json().error_code, "run_cancelled");
    assert.equal(stopped.headers["x-run-id"], answer.run_id);
    assert.deepEqual(await messagesOf(cluster.url, thread), ["go", "step 1", "step 2"]);
    const next = await request(cluster.url, "POST", "/steps-agent/invoke", { ...body, agent_config: { steps: 1 } }, {}, onB.agent);
    assert.equal(next.status, 200, next.body);

    const idle = await request(cluster.url, "POST", "/cancel", { thread_id: randomUUID() }, {}, onB.agent);
    assert.equal(idle.json().cancelled, false, "the default agent's alias; nothing runs there");
  });

  test("a stream cut by the network resumes on the other worker and follows the run to its end", async () => {
    const thread = randomUUID();
    const cut = await streamThenCut(
      cluster,
      { input: { message: "go" }, thread_id: thread, agent_config: { steps: 3, gap_ms: 100, sleep_ms: 500 } },
      `cut-${randomUUID()}`,
    );
    assert.equal(cut.frames[0]!.id, 1);
    // The worker that served the cut stream logs its request when the connection closes.
    const line = await cluster.waitForLog((l) => l.msg === "request" && l.request_id === cut.requestId, 10_000);
    const other = pinned.find(([connection]) => connection!.worker !== line.worker)![0]!;

    const resumed = await request(
      cluster.url,
      "GET",
      `/steps-agent/runs/${cut.runId}/stream?thread_id=${thread}`,
      undefined,
      { "last-event-id": String(cut.frames.at(-1)!.id) },
      other.agent,
    );
    assert.equal(resumed.status, 200, resumed.body);
    const rest = parseSseFrames(resumed.body);
    assert.equal(rest.at(-1)!.data, "[DONE]");
    const all = [...cut.frames, ...rest.slice(0, -1)];
    assert.deepEqual(all.map((frame) => frame.id), all.map((_frame, index) => index + 1));
    assert.deepEqual(
      all.map((frame) => (JSON.parse(frame.data) as { content: { content: string } }).content.content),
      ["step 1", "step 2", "step 3", "finished"],
    );
    // Another user's token, or an unknown run, finds nothing.
    const unknown = await request(cluster.url, "GET", `/steps-agent/runs/${randomUUID()}/stream?thread_id=${thread}`, undefined, {}, other.agent);
    assert.equal(unknown.status, 404);
  });

  test("on the other worker: a resume from a run's last event ends at once with [DONE]; a run past the primary's bound is no longer kept, its live stream whole", async () => {
    const [[onA], [onB]] = pinned as [[PinnedConnection], [PinnedConnection]];
    const stream = (agent: string, body: Record<string, unknown>) =>
      request(cluster.url, "POST", `/${agent}/stream`, { input: { message: "go" }, stream_tokens: false, stream_resumable: true, ...body }, {}, onA.agent);
    const resume = (agent: string, runId: string, thread: string, last: number) =>
      request(cluster.url, "GET", `/${agent}/runs/${runId}/stream?thread_id=${thread}`, undefined, { "last-event-id": String(last) }, onB.agent);

    const thread = randomUUID();
    const done = await stream("steps-agent", { thread_id: thread, agent_config: { steps: 1 } });
    const frames = parseSseFrames(done.body);
    assert.deepEqual(frames.map((frame) => frame.id), [1, 2, undefined]);
    const runId = String(done.headers["x-run-id"]);
    const atEnd = await resume("steps-agent", runId, thread, 2);
    assert.equal(atEnd.status, 200, atEnd.body);
    assert.deepEqual(parseSseFrames(atEnd.body), [{ id: undefined, data: "[DONE]" }]);
    const past = parseSseFrames((await resume("steps-agent", runId, thread, 7)).body);
    assert.equal((JSON.parse(past[0]!.data) as { error_code: string }).error_code, "validation_failed");

    const big = randomUUID();
    const spew = await stream("spew-agent", { thread_id: big, agent_config: { chunks: 3, chunk_bytes: 128 * 1024 } });
    const live = parseSseFrames(spew.body);
    assert.equal(live.length, 5, "three 128 KiB messages, the last message, [DONE]");
    assert.equal(live.at(-1)!.data, "[DONE]");
    const gone = parseSseFrames((await resume("spew-agent", String(spew.headers["x-run-id"]), big, 1)).body);
    assert.equal(gone.length, 1);
    assert.equal((JSON.parse(gone[0]!.data) as { error_code: string }).error_code, "run_events_not_found");
  });
});
