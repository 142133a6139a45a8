// Cancel and resume across hosts: two primaries ("hosts") with two workers each, sharing one
// PostgreSQL schema and one Redis key prefix. A cancel sent to one host stops the run on the other
// (Redis pub/sub); a stream cut on one host resumes on the other from Redis Streams (from past its
// last event: an error at once), and expires.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { Redis } from "ioredis";
import { DATABASE_URL, dropSchema, uniqueSchema } from "../helpers/postgres.ts";
import { REDIS_URL } from "../helpers/redis.ts";
import { parseSseFrames } from "../helpers/run-streams.ts";
import { eventually, request, startCluster, TOKEN, type Cluster, type Reply } from "./cluster-helper.ts";
import { messagesOf, STEPS_AGENT, streamThenCut } from "./run-control-helper.ts";

/** The last log lines of a host, for a failure's message. */
function recentLogs(name: string, host: Cluster, lines = 12): string {
  return `${name}:\n${host.logs.slice(-lines).map((line) => `  ${JSON.stringify(line).slice(0, 400)}`).join("\n")}`;
}

/** A request's answer so far, for a failure's message. */
function answerOf(pending: { reply?: Reply; error?: unknown }): string {
  if (pending.reply) return `${pending.reply.status} ${pending.reply.body.slice(0, 500)}`;
  return pending.error === undefined ? "no answer yet" : `failed: ${String(pending.error)}`;
}

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
    const invoked: { reply?: Reply; error?: unknown } = {};
    running.then((reply) => (invoked.reply = reply), (error: unknown) => (invoked.error = error));
    /** The last history read on host B: its messages, or the answer that was not a page. */
    let seen: string[] | string = [];
    const stepsSeen = async () => {
      const reply = await request(hostB.url, "GET", `/steps-agent/history?thread_id=${thread}`);
      if (reply.status !== 200) {
        seen = `${reply.status} ${reply.body.slice(0, 300)}`;
        return false;
      }
      seen = reply.json<{ messages: Array<{ content: unknown }> }>().messages.map((message) => String(message.content));
      return seen.length === 3;
    };
    const explain = () => `the invoke on host A: ${answerOf(invoked)}; history on host B: ${JSON.stringify(seen)}\n${recentLogs("host A", hostA)}\n${recentLogs("host B", hostB)}`;
    try {
      // The run waits 60 s after its steps: an invoke that answers before the steps show has failed,
      // and waiting on would only hide why. The bound is for a loaded machine; polling ends at the steps.
      const answeredFirst = running.then(() => {
        throw new Error("the invoke answered before its steps were seen");
      });
      await Promise.race([eventually(stepsSeen, 30_000, "the run's two steps checkpointed"), answeredFirst]);
    } catch (error) {
      // Leave no 60 s run behind on host A for the next test.
      await request(hostA.url, "POST", "/steps-agent/cancel", { thread_id: thread }).catch(() => undefined);
      throw new Error(`${(error as Error).message}; ${explain()}`, { cause: error });
    }

    const cancel = await request(hostB.url, "POST", "/steps-agent/cancel", { thread_id: thread });
    assert.equal(cancel.status, 200, cancel.body);
    const answer = cancel.json<{ cancelled: boolean; run_id: string }>();
    assert.equal(answer.cancelled, true, `${cancel.body}; ${explain()}`);
    const stopped = await running;
    assert.equal(stopped.status, 409, explain());
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
    const explain = () =>
      `frames before the cut: ${JSON.stringify(cut.frames)}; resumed on host B: ${resumed.status} ${JSON.stringify(resumed.body.slice(0, 2000))}\n` +
      `${recentLogs("host A", hostA)}\n${recentLogs("host B", hostB)}`;
    assert.equal(resumed.status, 200, explain());
    const rest = parseSseFrames(resumed.body);
    assert.equal(rest.filter((frame) => frame.data === "[DONE]").length, 1, explain());
    const all = [...cut.frames, ...rest.slice(0, -1)];
    assert.deepEqual(all.map((frame) => frame.id), all.map((_frame, index) => index + 1), explain());
    assert.deepEqual(
      all.map((frame) => (JSON.parse(frame.data) as { content: { content: string } }).content.content),
      ["step 1", "step 2", "step 3", "finished"],
      explain(),
    );

    const jsonl = await request(hostB.url, "GET", `/steps-agent/runs/${cut.runId}/stream/jsonl?thread_id=${thread}&after=3`);
    assert.deepEqual(
      jsonl.body.trim().split("\n").map((line) => (JSON.parse(line) as { seq: number }).seq),
      [4],
    );
    // From the run's last event: its end. From past it: an error event at once, not a read held
    // open (a slot and a Redis connection) until the record expires.
    const atEnd = await request(hostB.url, "GET", path, undefined, { "last-event-id": "4" });
    assert.deepEqual(parseSseFrames(atEnd.body), [{ id: undefined, data: "[DONE]" }], explain());
    const past = parseSseFrames((await request(hostB.url, "GET", path, undefined, { "last-event-id": "5" })).body);
    assert.equal(past.length, 1, explain());
    assert.equal((JSON.parse(past[0]!.data) as { error_code: string }).error_code, "validation_failed");
    assert.equal(await redis.exists(`${prefix}:run-events:${cut.runId}`), 1, "answered before the record expired");
    // Another conversation's address (the same run id under another thread) finds nothing.
    assert.equal((await request(hostB.url, "GET", `/steps-agent/runs/${cut.runId}/stream?thread_id=other`)).status, 404);
    await eventually(async () => (await request(hostB.url, "GET", path)).status === 404, 6_000, "the events expired");
    assert.equal(await redis.exists(`${prefix}:run-events:${cut.runId}`), 0);
  });

  test("Redis connections: two per worker, with resumes reading on a host other than the run's", async () => {
    const thread = randomUUID();
    // Two steps, then the run waits (until cancelled): the resumes below follow a run that goes on.
    const cut = await streamThenCut(
      hostA,
      { input: { message: "go" }, thread_id: thread, agent_config: { steps: 2, sleep_ms: 60_000 } },
      `held-${randomUUID()}`,
    );
    const path = `/steps-agent/runs/${cut.runId}/stream?thread_id=${thread}`;
    const readers = Array.from({ length: 3 }, () => new AbortController());
    const resumes = readers.map((reader) =>
      fetch(`${hostB.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}`, "last-event-id": "1" }, signal: reader.signal }),
    );
    try {
      const answers = await Promise.all(resumes);
      for (const answer of answers) assert.equal(answer.status, 200);
      // The readers wait for the run's next event: they listen on its channel.
      const channel = `${prefix}:run-events-added:${cut.runId}`;
      await eventually(
        async () => Number(((await redis.pubsub("NUMSUB", channel)) as [string, number])[1]) >= 1,
        10_000,
        "a reader subscribed to the run's channel",
      );
      const pids = [...hostA.workerPids(), ...hostB.workerPids()];
      const names = (await redis.client("LIST") as string).split("\n").map((line) => /\bname=(\S*)/.exec(line)?.[1]);
      for (const pid of pids) {
        const count = names.filter((name) => name === `agenthost:${pid}`).length;
        assert.ok(count >= 1 && count <= 2, `worker ${pid} holds ${count} Redis connections`);
      }
    } finally {
      for (const reader of readers) reader.abort();
      await Promise.allSettled(resumes.map(async (resume) => (await resume).body?.cancel()));
      await request(hostA.url, "POST", "/steps-agent/cancel", { thread_id: thread });
    }
  });
});
