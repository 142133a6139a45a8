// Cancel and resume across hosts: two primaries ("hosts") with two workers each, sharing one
// PostgreSQL schema and one Redis key prefix. A cancel sent to one host stops the run on the other
// (Redis pub/sub); a stream cut on one host resumes on the other from Redis Streams, and expires.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { Redis } from "ioredis";
import { DATABASE_URL, dropSchema, uniqueSchema } from "../helpers/postgres.ts";
import { REDIS_URL } from "../helpers/redis.ts";
import { parseSseFrames } from "../helpers/run-streams.ts";
import { eventually, request, startCluster, type Cluster } from "./cluster-helper.ts";
import { messagesOf, STEPS_AGENT, streamThenCut } from "./run-control-helper.ts";

describe("cancel and resume across two hosts sharing PostgreSQL and Redis", () => {
  const schema = uniqueSchema("agenthost_runctl");
  const prefix = `agenthost-test:${randomUUID()}`;
  const redis = new Redis(REDIS_URL);
  let hostA: Cluster;
  let hostB: Cluster;

  before(async () => {
    const shared = {
      MEMORY_BACKEND: "serverdb",
      DATABASE_URL,
      SERVERDB_SCHEMA: schema,
      REDIS_URL,
      REDIS_KEY_PREFIX: prefix,
      AGENT_PATHS: JSON.stringify([STEPS_AGENT]),
      STREAM_RESUME_TTL: "2",
    };
    hostA = await startCluster(shared);
    hostB = await startCluster(shared);
  });

  after(async () => {
    await Promise.all([hostA?.stop("SIGKILL"), hostB?.stop("SIGKILL")]);
    await dropSchema(schema);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  test("a cancel sent to one host stops the run on the other and frees the conversation", async () => {
    const thread = randomUUID();
    const body = { input: { message: "go" }, thread_id: thread, agent_config: { steps: 2, sleep_ms: 60_000 } };
    const running = request(hostA.url, "POST", "/steps-agent/invoke", body);
    await eventually(async () => (await messagesOf(hostB.url, thread)).length === 3, 10_000, "the run's two steps checkpointed");

    const cancel = await request(hostB.url, "POST", "/steps-agent/cancel", { thread_id: thread });
    assert.equal(cancel.status, 200, cancel.body);
    const answer = cancel.json<{ cancelled: boolean; run_id: string }>();
    assert.equal(answer.cancelled, true);
    const stopped = await running;
    assert.equal(stopped.status, 409);
    assert.equal(stopped.json().error_code, "run_cancelled");
    assert.equal(stopped.headers["x-run-id"], answer.run_id);
    assert.deepEqual(await messagesOf(hostB.url, thread), ["go", "step 1", "step 2"]);

    // The lock is free within a second (the Redis lock key is gone), and host B may run the conversation.
    await eventually(async () => (await redis.keys(`${prefix}:lock:*`)).length === 0, 1_000, "the lock released in Redis");
    const next = await request(hostB.url, "POST", "/steps-agent/invoke", { ...body, agent_config: { steps: 1 } });
    assert.equal(next.status, 200, next.body);

    const idle = await request(hostB.url, "POST", "/steps-agent/cancel", { thread_id: randomUUID() });
    assert.deepEqual(idle.json(), { thread_id: idle.json().thread_id, cancelled: false, run_id: null });
  });

  test("a stream cut on one host resumes on the other; its events expire STREAM_RESUME_TTL after the end", async () => {
    const thread = randomUUID();
    const cut = await streamThenCut(
      hostA,
      { input: { message: "go" }, thread_id: thread, agent_config: { steps: 3, gap_ms: 100, sleep_ms: 500 } },
      `cut-${randomUUID()}`,
    );
    const path = `/steps-agent/runs/${cut.runId}/stream?thread_id=${thread}`;
    const resumed = await request(hostB.url, "GET", path, undefined, { "last-event-id": String(cut.frames.at(-1)!.id) });
    assert.equal(resumed.status, 200, resumed.body);
    const rest = parseSseFrames(resumed.body);
    assert.equal(rest.filter((frame) => frame.data === "[DONE]").length, 1);
    const all = [...cut.frames, ...rest.slice(0, -1)];
    assert.deepEqual(all.map((frame) => frame.id), all.map((_frame, index) => index + 1));
    assert.deepEqual(
      all.map((frame) => (JSON.parse(frame.data) as { content: { content: string } }).content.content),
      ["step 1", "step 2", "step 3", "finished"],
    );

    const jsonl = await request(hostB.url, "GET", `/steps-agent/runs/${cut.runId}/stream/jsonl?thread_id=${thread}&after=3`);
    assert.deepEqual(
      jsonl.body.trim().split("\n").map((line) => (JSON.parse(line) as { seq: number }).seq),
      [4],
    );
    // Another conversation's address (the same run id under another thread) finds nothing.
    assert.equal((await request(hostB.url, "GET", `/steps-agent/runs/${cut.runId}/stream?thread_id=other`)).status, 404);
    await eventually(async () => (await request(hostB.url, "GET", path)).status === 404, 6_000, "the events expired");
    assert.equal(await redis.exists(`${prefix}:run-events:${cut.runId}`), 0);
  });
});
