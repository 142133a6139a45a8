// Background runs on bin/agenthost with two workers, on SQLite (one host, no Redis) and on
// PostgreSQL with Redis: every worker killed with SIGKILL in the middle of a run, and the run still
// ends `success` on a replacement, continued from its last checkpoint (each step once, one answer in
// the thread, its second attempt in the events' metadata); runs enqueued on one thread across both
// workers execute in order of arrival; interrupt and rollback across them.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { Client } from "@langchain/langgraph-sdk";
import { Redis } from "ioredis";
import { dropSchema, DATABASE_URL, uniqueSchema } from "../helpers/postgres.ts";
import { REDIS_URL } from "../helpers/redis.ts";
import { eventually, startCluster, TOKEN, withLogs, type Cluster, type LogLine } from "./cluster-helper.ts";
import { STEPS_AGENT } from "./run-control-helper.ts";

const STEPS = "steps-agent";
type Message = { content: unknown };
const contents = (values: unknown) => ((values as { messages?: Message[] } | undefined)?.messages ?? []).map((message) => String(message.content));

const TOPOLOGIES = [
  { name: "SQLite, one host without Redis", engine: "database", env: () => ({}), cleanup: async () => {} },
  (() => {
    const schema = uniqueSchema("agenthost_bg");
    const prefix = `agenthost-test:${randomUUID()}`;
    return {
      name: "PostgreSQL and Redis",
      engine: "bullmq",
      env: () => ({ MEMORY_BACKEND: "serverdb", DATABASE_URL, SERVERDB_SCHEMA: schema, REDIS_URL, REDIS_KEY_PREFIX: prefix }),
      cleanup: async () => {
        await dropSchema(schema);
        const redis = new Redis(REDIS_URL);
        const keys = await redis.keys(`${prefix}:*`);
        if (keys.length) await redis.del(...keys);
        redis.disconnect();
      },
    };
  })(),
];

for (const topology of TOPOLOGIES) {
  describe(`background runs on two workers (${topology.name})`, { concurrency: false }, () => {
    let cluster: Cluster;
    let client: Client;

    before(async () => {
      cluster = await startCluster({
        ...topology.env(),
        AGENT_PATHS: JSON.stringify([STEPS_AGENT]),
        BACKGROUND_RUN_LEASE: "1",
        BACKGROUND_POLL_INTERVAL: "0.2",
        // The worker frozen below must not be replaced as unresponsive while the test waits on it.
        WORKER_LIVENESS_TIMEOUT: "120",
      });
      client = new Client({ apiUrl: cluster.url, apiKey: TOKEN});
    });
    after(async () => {
      await cluster?.stop("SIGKILL");
      await topology.cleanup();
    });

    /** The run's record, read through any worker (a killed one's connection fails: try again). */
    const statusOf = async (threadId: string, runId: string) => {
      try {
        return (await client.runs.get(threadId, runId)).status;
      } catch {
        return "unreachable";
      }
    };

    /** A four-step background run on a new thread, once its first step is stored (well under way). */
    const underWay = async (content: string) => {
      const thread = await client.threads.create();
      const run = await client.runs.create(thread.thread_id, STEPS, {
        input: { messages: [{ role: "user", content }] },
        config: { configurable: { steps: 4, gap_ms: 600 } },
      });
      await eventually(async () => contents((await client.threads.getState(thread.thread_id)).values).includes("step 1"), 30_000, "step 1 stored");
      return { thread, run };
    };

    /** The cluster's log lines about a run: its own, its thread's, warnings and errors, workers coming and going. */
    const about = (threadId: string, runId: string) => (line: LogLine) =>
      line.run_id === runId || line.thread_id === threadId || Number(line.level) >= 40 || /worker|listening/.test(line.msg ?? "");

    /** The pid of the worker that started the run. */
    const startedOn = (runId: string) => {
      const started = cluster.logs.find((line) => line.msg === "background run started" && line.run_id === runId);
      assert.ok(started?.pid, "the run started on a worker");
      return Number(started.pid);
    };

    test("SIGKILL of every worker mid-run: the run ends success on a replacement, each step once, one answer", async () => {
      const { thread, run } = await underWay("survive");
      const victims = cluster.workerPids();
      assert.equal(victims.length, 2);
      const mark = cluster.logs.length;
      for (const pid of victims) process.kill(pid, "SIGKILL");
      await eventually(() => cluster.logs.slice(mark).filter((line) => line.msg === "listening").length >= 2, 60_000, "both workers replaced");
      await eventually(async () => (await statusOf(thread.thread_id, run.run_id)) === "success", 60_000, "the run succeeded");
      assert.deepEqual(contents((await client.threads.getState(thread.thread_id)).values), ["survive", "step 1", "step 2", "step 3", "step 4", "finished"]);
      assert.ok(cluster.logs.some((line) => line.msg === "background runs: taking runs" && line.engine === topology.engine), `the ${topology.engine} engine`);
      const resumed = cluster.logs.find((line) => line.msg === "background run resumed" && line.run_id === run.run_id);
      assert.ok(resumed, "a replacement resumed the run");
      assert.ok(Number(resumed.attempt) >= 2);
      const events = [];
      for await (const part of client.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: "-1" })) events.push(part);
      assert.equal((events[0]?.data as { attempt?: number }).attempt, resumed.attempt, "the recorded events are the last attempt's");
    });

    test("a worker stopped with SIGTERM hands its run back; another worker finishes it, each step once", async () => {
      const { thread, run } = await underWay("hand me on");
      const pid = startedOn(run.run_id);
      process.kill(pid, "SIGTERM");
      await eventually(() => cluster.logs.some((line) => line.msg === "background run handed back" && line.run_id === run.run_id), 60_000, "the run handed back");
      await eventually(async () => (await statusOf(thread.thread_id, run.run_id)) === "success", 60_000, "the run succeeded");
      assert.deepEqual(contents((await client.threads.getState(thread.thread_id)).values), ["hand me on", "step 1", "step 2", "step 3", "step 4", "finished"]);
      // The run's status is written before its worker logs its end.
      await cluster.waitForLog((line) => line.msg === "background run ended" && line.run_id === run.run_id, 30_000);
      const ends = cluster.logs.filter((line) => line.msg === "background run ended" && line.run_id === run.run_id);
      assert.equal(ends.length, 1, "ended once");
      assert.notEqual(ends[0]!.pid, pid, "on another worker");
    });

    test("a worker frozen past its lease (SIGSTOP) loses its run: thawed, it stops it and leaves its end to a later attempt", async () => {
      const { thread, run } = await underWay("frozen");
      await withLogs(cluster, about(thread.thread_id, run.run_id), async () => {
        const frozen = startedOn(run.run_id);
        const retries = async () => Number(/^agenthost_background_run_retries_total (\S+)$/m.exec(await (await fetch(cluster.metricsUrl)).text())?.[1] ?? 0);
        const before = await retries();
        const mark = cluster.logs.length;
        process.kill(frozen, "SIGSTOP");
        try {
          // The lease ran out and the other worker claimed the run again (it waits for the frozen
          // worker's hold on the thread, or takes it once that has expired).
          await eventually(async () => (await retries()) > before, 60_000, "the run claimed again");
        } finally {
          process.kill(frozen, "SIGCONT");
        }
        await cluster.waitForLog((line) => line.msg === "background run lost its lease: another attempt takes it over" && line.run_id === run.run_id && line.pid === frozen, 30_000, mark);
        await eventually(async () => (await statusOf(thread.thread_id, run.run_id)) === "success", 60_000, "the run succeeded");
        await cluster.waitForLog((line) => line.msg === "background run ended" && line.run_id === run.run_id, 30_000);
        assert.deepEqual(contents((await client.threads.getState(thread.thread_id)).values), ["frozen", "step 1", "step 2", "step 3", "step 4", "finished"]);
        const ends = cluster.logs.filter((line) => line.msg === "background run ended" && line.run_id === run.run_id);
        assert.equal(ends.length, 1, "ended once");
        // By a later attempt: the other worker's, or the thawed one's claiming it anew.
        assert.ok(Number(ends[0]!.attempt) >= 2, "by an attempt after the frozen one");
        assert.equal(await statusOf(thread.thread_id, run.run_id), "success");
      });
    });

    test("runs enqueued on one thread execute in order of arrival, whichever worker claims them", async () => {
      const thread = await client.threads.create();
      const runs = [];
      for (const word of ["one", "two", "three", "four"]) {
        runs.push(
          await client.runs.create(thread.thread_id, STEPS, {
            input: { messages: [{ role: "user", content: word }] },
            config: { configurable: { steps: 1, gap_ms: 100 } },
            multitaskStrategy: "enqueue",
          }),
        );
      }
      for (const run of runs) await client.runs.join(thread.thread_id, run.run_id);
      for (const run of runs) assert.equal(await statusOf(thread.thread_id, run.run_id), "success");
      assert.deepEqual(contents((await client.threads.getState(thread.thread_id)).values), [
        ...["one", "step 1", "finished"],
        ...["two", "step 1", "finished"],
        ...["three", "step 1", "finished"],
        ...["four", "step 1", "finished"],
      ]);
    });

    test("interrupt keeps the stopped run's steps; rollback takes its run back as if it never ran, read alike on every worker", async () => {
      const thread = await client.threads.create();
      const begin = (content: string, configurable: Record<string, number>, multitaskStrategy?: "interrupt" | "rollback") =>
        client.runs.create(thread.thread_id, STEPS, { input: { messages: [{ role: "user", content }] }, config: { configurable }, multitaskStrategy });
      const lastIs = async (...tail: string[]) => {
        const now = contents((await client.threads.getState(thread.thread_id)).values);
        return now.slice(-tail.length).join("|") === tail.join("|");
      };
      const stopped = await begin("stop me", { steps: 1, sleep_ms: 60_000 });
      await eventually(() => lastIs("stop me", "step 1"), 30_000, "the first run's step stored");
      const interrupter = await begin("interrupter", { steps: 1 }, "interrupt");
      await client.runs.join(thread.thread_id, interrupter.run_id);
      assert.equal(await statusOf(thread.thread_id, stopped.run_id), "interrupted");
      const kept = ["stop me", "step 1", "interrupter", "step 1", "finished"];
      assert.deepEqual(contents((await client.threads.getState(thread.thread_id)).values), kept);

      const doomed = await begin("doomed", { steps: 2, sleep_ms: 60_000 });
      await eventually(() => lastIs("doomed", "step 1", "step 2"), 30_000, "the doomed run's steps stored");
      const instead = await begin("instead", { steps: 1 }, "rollback");
      await client.runs.join(thread.thread_id, instead.run_id);
      await assert.rejects(client.runs.get(thread.thread_id, doomed.run_id), (error: { status?: number }) => error.status === 404);
      const expected = [...kept, "instead", "step 1", "finished"];
      // Each read goes to either worker: both answer the same, and the same as storage.
      for (let i = 0; i < 4; i++) assert.deepEqual(contents((await client.threads.getState(thread.thread_id)).values), expected);
      const history = await client.threads.getHistory(thread.thread_id, { limit: 100 });
      for (const state of history) assert.ok(!contents(state.values).includes("doomed"), "a checkpoint of the doomed run is left");
    });
  });
}

describe("a background run whose worker dies on every attempt ends error (BACKGROUND_RUN_MAX_ATTEMPTS)", () => {
  let cluster: Cluster;
  let client: Client;

  before(async () => {
    cluster = await startCluster({ AGENT_PATHS: JSON.stringify([STEPS_AGENT]), BACKGROUND_RUN_LEASE: "1", BACKGROUND_POLL_INTERVAL: "0.2", BACKGROUND_RUN_MAX_ATTEMPTS: "1" });
    client = new Client({ apiUrl: cluster.url, apiKey: TOKEN });
  });
  after(() => cluster?.stop("SIGKILL"));

  test("one attempt allowed, its worker killed: the run is not started again and ends error, its thread error", async () => {
    const thread = await client.threads.create();
    const run = await client.runs.create(thread.thread_id, STEPS, {
      input: { messages: [{ role: "user", content: "doomed" }] },
      config: { configurable: { steps: 4, gap_ms: 600 } },
    });
    await eventually(async () => contents((await client.threads.getState(thread.thread_id)).values).includes("step 1"), 30_000, "step 1 stored");
    const started = cluster.logs.find((line) => line.msg === "background run started" && line.run_id === run.run_id);
    assert.ok(started?.pid);
    process.kill(Number(started.pid), "SIGKILL");
    const givenUp = await cluster.waitForLog((line) => line.msg === "background run given up: its workers stopped on every attempt" && line.run_id === run.run_id, 60_000);
    assert.equal(givenUp.attempt, 2);
    await eventually(async () => {
      try {
        return (await client.runs.get(thread.thread_id, run.run_id)).status === "error";
      } catch {
        return false;
      }
    }, 30_000, "the run ended error");
    assert.equal((await client.threads.get(thread.thread_id)).status, "error");
    assert.ok(!cluster.logs.some((line) => line.msg === "background run resumed" && line.run_id === run.run_id), "not started again");
  });
});
