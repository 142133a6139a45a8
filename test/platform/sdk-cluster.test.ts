// LangGraph's own JS SDK (@langchain/langgraph-sdk) against a real cluster: bin/agenthost with two
// workers sharing one PostgreSQL schema and one Redis key prefix. Each SDK client here talks to one
// worker only (one kept-alive connection that worker accepted, checked against the worker's request
// log lines), so each step says which worker serves it: a thread created on one worker and run on
// both reads the same on both; a run streaming on one worker is cancelled from the other (its
// stream ends run_cancelled, a join on the other worker returns, the record reads "interrupted"
// everywhere); a second run sent to the other worker while the thread is busy is refused 409; and
// another user's requests find no such thread on either worker.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { Client } from "@langchain/langgraph-sdk";
import { Redis } from "ioredis";
import { Client as Connection, Headers as WireHeaders, fetch as wireFetch } from "undici";
import { DATABASE_URL, dropSchema, uniqueSchema } from "../helpers/postgres.ts";
import { REDIS_URL } from "../helpers/redis.ts";
import { eventually, startCluster, TOKEN, type Cluster } from "../cluster/cluster-helper.ts";
import { STEPS_AGENT } from "../cluster/run-control-helper.ts";

const CHATBOT = "chatbot-agent";
const STEPS = "steps-agent";
const USERS = { alice: "alice-token", bob: "bob-token" };
/** How long a holding run waits for its cancel: far past any test's end, never reached. */
const HOLD_MS = 240_000;
/** A bound on each wait for observable state, for a loaded two-core machine; polling ends as soon as the state shows. */
const WAIT_MS = 60_000;
const SUBTEST = { timeout: 180_000 };

interface StreamPart {
  readonly event: string;
  readonly data: unknown;
}

type Message = { type: string; content: unknown; id?: string | null };

const messagesOf = (values: unknown): Message[] => ((values as { messages?: Message[] } | undefined)?.messages ?? []);
const contentsOf = (values: unknown): unknown[] => messagesOf(values).map((message) => message.content);

/** What the SDK rejected with: its HTTPError's status and body. */
function refusal(error: unknown): { status: number | undefined; text: string } {
  const { status, text, message } = error as { status?: number; text?: string; message?: string };
  return { status, text: text ?? message ?? String(error) };
}

async function rejectsWith(work: Promise<unknown>, status: number, what: string): Promise<string> {
  let text = "";
  await assert.rejects(work, (error: unknown) => {
    const got = refusal(error);
    assert.equal(got.status, status, `${what}: ${got.text}`);
    text = got.text;
    return true;
  });
  return text;
}

/** Resolves with `work`, or rejects saying `what` (read then) if it has not settled within `ms`. */
async function within<T>(work: Promise<T>, ms: number, what: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`not within ${ms} ms: ${what()}`)), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * One kept-alive connection a worker accepted, and SDK clients whose every request goes over it.
 * Each request carries an `x-request-id` of its own, kept so the test can check, from the worker's
 * request log line, that it really was served there.
 */
class Pin {
  readonly requestIds: string[] = [];
  private readonly clients = new Map<string, Client>();

  constructor(
    readonly worker: number,
    readonly connection: Connection,
    private readonly url: string,
  ) {}

  /** The SDK as the holder of `apiKey` (the cluster's token by default), over this connection. */
  sdk(apiKey: string = TOKEN): Client {
    let client = this.clients.get(apiKey);
    if (!client) {
      client = new Client({ apiUrl: this.url, apiKey, callerOptions: { fetch: this.fetch } });
      this.clients.set(apiKey, client);
    }
    return client;
  }

  private readonly fetch = (input: string | URL, init: { method?: string; headers?: Record<string, string>; body?: string; signal?: AbortSignal | null } = {}) => {
    const requestId = `sdk-cluster-${randomUUID()}`;
    this.requestIds.push(requestId);
    const headers = new WireHeaders(init.headers);
    headers.set("x-request-id", requestId);
    return wireFetch(input, { method: init.method, headers, body: init.body, signal: init.signal ?? undefined, dispatcher: this.connection });
  };
}

/** A worker as the test reaches it: three connections of its own (calls, a stream, a join held open beside them). */
interface Worker {
  readonly id: number;
  readonly calls: Pin;
  readonly stream: Pin;
  readonly join: Pin;
}

/**
 * Connections to each of the cluster's two workers, opened one at a time (the kernel decides which
 * worker accepts each, SCHED_NONE) and kept when their worker still needs one. The first worker
 * found is A, the other B.
 */
async function pinWorkers(cluster: Cluster, perWorker = 3, tries = 200): Promise<[Worker, Worker]> {
  const byWorker = new Map<number, Pin[]>();
  const full = () => byWorker.size === 2 && [...byWorker.values()].every((pins) => pins.length >= perWorker);
  for (let i = 0; i < tries && !full(); i++) {
    const connection = new Connection(cluster.url, { keepAliveTimeout: 60_000, keepAliveMaxTimeout: 60_000 });
    const requestId = `sdk-cluster-probe-${randomUUID()}`;
    const probe = await wireFetch(`${cluster.url}/ok`, { headers: { "x-request-id": requestId }, dispatcher: connection });
    await probe.arrayBuffer();
    const line = await cluster.waitForLog((l) => l.msg === "request" && l.request_id === requestId, 10_000);
    const worker = line.worker as number;
    const pins = byWorker.get(worker) ?? [];
    if (pins.length >= perWorker || (!byWorker.has(worker) && byWorker.size >= 2)) {
      await connection.destroy();
      continue;
    }
    pins.push(new Pin(worker, connection, cluster.url));
    byWorker.set(worker, pins);
  }
  if (!full()) {
    await unpin([...byWorker.values()].flat());
    throw new Error(`could not open ${perWorker} connections to each of two workers in ${tries} tries`);
  }
  const [a, b] = [...byWorker].map(([id, [calls, stream, join]]) => ({ id, calls: calls!, stream: stream!, join: join! }));
  return [a!, b!];
}

const pinsOf = (workers: readonly Worker[]): Pin[] => workers.flatMap((worker) => [worker.calls, worker.stream, worker.join]);

async function unpin(pins: readonly Pin[]): Promise<void> {
  await Promise.all(pins.map((pin) => pin.connection.destroy()));
}

/** The worker that logged serving `requestId`. */
async function servedBy(cluster: Cluster, requestId: string): Promise<number> {
  const line = await cluster.waitForLog((l) => l.msg === "request" && l.request_id === requestId, 10_000);
  return line.worker as number;
}

/** Every request sent over each pin was served by the pin's worker (no connection was reopened elsewhere). */
async function assertPinned(cluster: Cluster, workers: readonly Worker[]): Promise<void> {
  for (const pin of pinsOf(workers)) {
    for (const requestId of pin.requestIds) {
      assert.equal(await servedBy(cluster, requestId), pin.worker, `request ${requestId} was sent over a connection to worker ${pin.worker}`);
    }
  }
}

/** The workers whose request log lines name one of `runIds`: those that ran them. */
function workersRunning(cluster: Cluster, runIds: readonly string[]): Set<number> {
  const wanted = new Set(runIds);
  const workers = new Set<number>();
  for (const line of cluster.logs) {
    if (line.msg === "request" && typeof line.run_id === "string" && wanted.has(line.run_id) && typeof line.worker === "number") workers.add(line.worker);
  }
  return workers;
}

/** The last log lines of the cluster, for a failure's message. */
function recentLogs(cluster: Cluster, lines = 15): string {
  return cluster.logs
    .slice(-lines)
    .map((line) => `  ${JSON.stringify(line).slice(0, 400)}`)
    .join("\n");
}

interface Holding {
  readonly runId: string;
  /** Every part of the stream, once it has ended. */
  readonly parts: Promise<StreamPart[]>;
}

/**
 * Stream a steps-agent run on `thread` over `pin` that takes one step ("step 1", checkpointed) and
 * then waits HOLD_MS for its cancel. Resolves once `observer` (a connection to the other worker)
 * reads the run's record "running" and the step in the thread's state: the run is holding on the
 * pin's worker. (The stream itself holds each event back until the next, so the step's values
 * event reaches the client only when the run ends.)
 */
async function hold(pin: Pin, observer: Pin, thread: string, message: string): Promise<Holding> {
  let runId: string | undefined;
  const parts = (async () => {
    const seen: StreamPart[] = [];
    const stream = pin.sdk().runs.stream(thread, STEPS, {
      input: { messages: [{ role: "user", content: message }] },
      config: { configurable: { steps: 1, sleep_ms: HOLD_MS } },
      streamMode: ["values"],
      onRunCreated: (meta) => {
        runId = meta.run_id;
      },
    });
    for await (const part of stream) seen.push(part);
    return seen;
  })();
  const endedFirst = parts.then((all) => {
    throw new Error(`the holding run's stream ended before the run was seen holding: ${JSON.stringify(all)}`);
  });
  // Once the run is seen holding, the stream's end (awaited through `parts`) is no failure here.
  void endedFirst.catch(() => undefined);
  const holding = async () => {
    if (!runId) return false;
    const run = await observer.sdk().runs.get(thread, runId);
    if (run.status !== "running") return false;
    return contentsOf((await observer.sdk().threads.getState(thread)).values).includes("step 1");
  };
  await Promise.race([eventually(holding, WAIT_MS, `the run on worker ${pin.worker} read running, its step taken, on worker ${observer.worker}`), endedFirst]);
  return { runId: runId!, parts };
}

describe("LangGraph SDK against a two-worker cluster on PostgreSQL and Redis", { concurrency: false }, () => {
  const schema = uniqueSchema("agenthost_sdk_cluster");
  const prefix = `agenthost-test:${randomUUID()}`;
  let cluster: Cluster;

  before(async () => {
    cluster = await startCluster({
      MEMORY_BACKEND: "serverdb",
      DATABASE_URL,
      SERVERDB_SCHEMA: schema,
      REDIS_URL,
      REDIS_KEY_PREFIX: prefix,
      AGENT_PATHS: JSON.stringify([STEPS_AGENT]),
      AUTH_USERS: JSON.stringify(USERS),
      THREAD_QUEUE_TIMEOUT: "0",
    });
  });

  after(async () => {
    await cluster?.stop("SIGKILL");
    await dropSchema(schema);
    const redis = new Redis(REDIS_URL);
    try {
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length) await redis.del(...keys);
    } finally {
      redis.disconnect();
    }
  });

  test("a thread created on one worker and run on both reads the same on each: state, history, runs and search", SUBTEST, async () => {
    const workers = await pinWorkers(cluster);
    const [a, b] = workers;
    try {
      const suite = randomUUID();
      const thread = await a.calls.sdk().threads.create({ metadata: { suite } });
      assert.equal(thread.status, "idle");
      // Runs alternate between the workers, waited and streamed.
      const plan = [
        { on: a, how: "wait" },
        { on: b, how: "stream" },
        { on: a, how: "stream" },
        { on: b, how: "wait" },
      ] as const;
      const sent: string[] = [];
      for (const [index, { on, how }] of plan.entries()) {
        const text = `message ${index + 1} via worker ${on.id} (${how})`;
        sent.push(text);
        const input = { messages: [{ role: "user", content: text }] };
        if (how === "wait") {
          const values = await on.calls.sdk().runs.wait(thread.thread_id, CHATBOT, { input });
          assert.equal(messagesOf(values).length, sent.length * 2, JSON.stringify(values));
        } else {
          const parts: StreamPart[] = [];
          for await (const part of on.calls.sdk().runs.stream(thread.thread_id, CHATBOT, { input, streamMode: ["values", "updates"] })) parts.push(part);
          assert.ok(!parts.some((part) => part.event === "error"), JSON.stringify(parts));
          assert.equal(messagesOf(parts.filter((part) => part.event === "values").at(-1)?.data).length, sent.length * 2, JSON.stringify(parts));
        }

        // Every worker reads the thread idle, its messages in order, and every run so far.
        const states = [];
        for (const worker of workers) {
          const client = worker.calls.sdk();
          const got = await client.threads.get(thread.thread_id);
          assert.equal(got.status, "idle", `thread status on worker ${worker.id} after run ${index + 1}`);
          assert.equal(messagesOf(got.values).length, sent.length * 2);
          const state = await client.threads.getState(thread.thread_id);
          const messages = messagesOf(state.values);
          assert.deepEqual(
            messages.map((message) => message.type),
            sent.flatMap(() => ["human", "ai"]),
            `message types on worker ${worker.id}`,
          );
          assert.deepEqual(
            messages.filter((message) => message.type === "human").map((message) => message.content),
            sent,
            `human messages on worker ${worker.id}`,
          );
          assert.deepEqual(state.next, []);
          states.push(state);
          const runs = await client.runs.list(thread.thread_id);
          assert.equal(runs.length, sent.length, `runs listed on worker ${worker.id}: ${JSON.stringify(runs)}`);
          assert.ok(
            runs.every((run) => run.status === "success"),
            JSON.stringify(runs.map((run) => run.status)),
          );
        }
        assert.deepEqual(states[1]!.checkpoint, states[0]!.checkpoint, "both workers read the same latest checkpoint");
        assert.deepEqual(states[1]!.values, states[0]!.values);
      }

      // The runs, their records and the history read the same on both workers.
      const [runsA, runsB] = await Promise.all(workers.map((worker) => worker.calls.sdk().runs.list(thread.thread_id)));
      const runIds = runsA!.map((run) => run.run_id);
      assert.deepEqual(
        runsB!.map((run) => run.run_id),
        runIds,
      );
      assert.equal(new Set(runIds).size, plan.length);
      for (const runId of runIds) {
        for (const worker of workers) assert.equal((await worker.calls.sdk().runs.get(thread.thread_id, runId)).status, "success");
      }
      const [historyA, historyB] = await Promise.all(workers.map((worker) => worker.calls.sdk().threads.getHistory(thread.thread_id, { limit: 100 })));
      assert.ok(historyA!.length >= plan.length * 2, String(historyA!.length));
      assert.deepEqual(
        historyB!.map((state) => state.checkpoint.checkpoint_id),
        historyA!.map((state) => state.checkpoint.checkpoint_id),
      );
      assert.equal(messagesOf(historyA![0]!.values).length, plan.length * 2, "newest first");
      for (const worker of workers) {
        const found = await worker.calls.sdk().threads.search({ metadata: { suite } });
        assert.deepEqual(
          found.map((each) => [each.thread_id, each.status]),
          [[thread.thread_id, "idle"]],
          `search on worker ${worker.id}`,
        );
        assert.equal(await worker.calls.sdk().threads.count({ metadata: { suite } }), 1);
      }

      await assertPinned(cluster, workers);
      assert.deepEqual(
        [...workersRunning(cluster, runIds)].sort(),
        [a.id, b.id].sort(),
        "the thread's runs were run by both workers",
      );
    } finally {
      await unpin(pinsOf(workers));
    }
  });

  test("a run streaming on one worker is cancelled from the other: run_cancelled, a join there returns, the record reads interrupted on both", SUBTEST, async () => {
    const workers = await pinWorkers(cluster);
    const [a, b] = workers;
    try {
      const thread = await a.calls.sdk().threads.create();
      const held = await hold(a.stream, b.calls, thread.thread_id, "hold on worker A");
      const explain = () => `run ${held.runId} on worker ${a.id}, cancelled from worker ${b.id}\n${recentLogs(cluster)}`;
      for (const worker of workers) assert.equal((await worker.calls.sdk().threads.get(thread.thread_id)).status, "busy", `thread status on worker ${worker.id}`);

      let joinedAt: number | undefined;
      const joined = b.join
        .sdk()
        .runs.join(thread.thread_id, held.runId)
        .then((values) => {
          joinedAt = Date.now();
          return values;
        });
      // A join that fails must not wait for the cancel to be reported.
      void joined.catch(() => undefined);
      assert.equal(joinedAt, undefined, "the join waits while the run holds");

      const cancelledAt = Date.now();
      await b.calls.sdk().runs.cancel(thread.thread_id, held.runId);

      const parts = await within(held.parts, WAIT_MS, () => `the stream on worker ${a.id} ending; ${explain()}`);
      const error = parts.find((part) => part.event === "error");
      assert.equal((error?.data as { error?: string } | undefined)?.error, "run_cancelled", `${JSON.stringify(parts)}\n${explain()}`);
      assert.equal(parts.at(-1)?.event, "error", "the error event ends the stream");

      const values = await within(joined, WAIT_MS, () => `the join on worker ${b.id} returning; ${explain()}`);
      assert.ok(joinedAt! >= cancelledAt, "the join returned after the cancel was sent");
      assert.deepEqual(contentsOf(values), ["hold on worker A", "step 1"], "the completed step stays in the thread");

      for (const worker of workers) {
        const client = worker.calls.sdk();
        const run = await client.runs.get(thread.thread_id, held.runId);
        assert.equal(run.status, "interrupted", `the run's status on worker ${worker.id}`);
        const [listed] = await client.runs.list(thread.thread_id);
        assert.equal(listed?.run_id, held.runId);
        assert.equal(listed?.status, "interrupted");
        const got = await client.threads.get(thread.thread_id);
        assert.equal(got.status, "idle", `thread status on worker ${worker.id}`);
        assert.deepEqual(contentsOf((await client.threads.getState(thread.thread_id)).values), ["hold on worker A", "step 1"]);
      }

      await assertPinned(cluster, workers);
      assert.deepEqual([...workersRunning(cluster, [held.runId])], [a.id], "the run ran on worker A");
    } finally {
      await unpin(pinsOf(workers));
    }
  });

  test("a second run on a busy thread, sent to the other worker, is refused 409 (multitask reject) and leaves no trace", SUBTEST, async () => {
    const workers = await pinWorkers(cluster);
    const [a, b] = workers;
    try {
      const thread = await a.calls.sdk().threads.create();
      const held = await hold(a.stream, b.calls, thread.thread_id, "hold on worker A");

      const second = { input: { messages: [{ role: "user", content: "a second run" }] } };
      const waited = await rejectsWith(
        b.calls.sdk().runs.wait(thread.thread_id, STEPS, { ...second, multitaskStrategy: "reject" }),
        409,
        `runs.wait on worker ${b.id}`,
      );
      assert.match(waited, /conversation_busy/);
      const streamed = (async () => {
        for await (const part of b.stream.sdk().runs.stream(thread.thread_id, STEPS, second)) void part;
      })();
      await rejectsWith(streamed, 409, `runs.stream on worker ${b.id}`);

      for (const worker of workers) {
        const client = worker.calls.sdk();
        assert.equal((await client.threads.get(thread.thread_id)).status, "busy", `thread status on worker ${worker.id}`);
        const runs = await client.runs.list(thread.thread_id);
        assert.deepEqual(
          runs.map((run) => [run.run_id, run.status]),
          [[held.runId, "running"]],
          `the refused runs are not recorded (worker ${worker.id})`,
        );
        assert.deepEqual(contentsOf((await client.threads.getState(thread.thread_id)).values), ["hold on worker A", "step 1"]);
      }

      // Stopped where it runs; once its stream has ended the thread is free, for a run on the other worker.
      await a.calls.sdk().runs.cancel(thread.thread_id, held.runId, true);
      const parts = await within(held.parts, WAIT_MS, () => `the stream on worker ${a.id} ending\n${recentLogs(cluster)}`);
      assert.equal((parts.at(-1)?.data as { error?: string } | undefined)?.error, "run_cancelled", JSON.stringify(parts));
      const values = await b.calls.sdk().runs.wait(thread.thread_id, STEPS, {
        input: { messages: [{ role: "user", content: "after the cancel" }] },
        config: { configurable: { steps: 1 } },
      });
      assert.deepEqual(contentsOf(values), ["hold on worker A", "step 1", "after the cancel", "step 1", "finished"]);
      for (const worker of workers) assert.equal((await worker.calls.sdk().threads.get(thread.thread_id)).status, "idle");

      await assertPinned(cluster, workers);
    } finally {
      await unpin(pinsOf(workers));
    }
  });

  test("another user's requests to a thread are 404 on both workers", SUBTEST, async () => {
    const workers = await pinWorkers(cluster);
    const [a, b] = workers;
    try {
      const owner = randomUUID();
      const thread = await a.calls.sdk(USERS.alice).threads.create({ metadata: { owner } });
      await b.calls.sdk(USERS.alice).runs.wait(thread.thread_id, CHATBOT, { input: { messages: [{ role: "user", content: "secret" }] } });
      const [run] = await a.calls.sdk(USERS.alice).runs.list(thread.thread_id);
      assert.ok(run);

      for (const worker of workers) {
        const bob = worker.calls.sdk(USERS.bob);
        const id = thread.thread_id;
        const on = `(bob on worker ${worker.id})`;
        await rejectsWith(bob.threads.get(id), 404, `threads.get ${on}`);
        await rejectsWith(bob.threads.getState(id), 404, `threads.getState ${on}`);
        await rejectsWith(bob.threads.getHistory(id), 404, `threads.getHistory ${on}`);
        await rejectsWith(bob.threads.update(id, { metadata: { owner: "bob" } }), 404, `threads.update ${on}`);
        await rejectsWith(bob.runs.list(id), 404, `runs.list ${on}`);
        await rejectsWith(bob.runs.get(id, run.run_id), 404, `runs.get ${on}`);
        await rejectsWith(bob.runs.join(id, run.run_id), 404, `runs.join ${on}`);
        await rejectsWith(bob.runs.cancel(id, run.run_id), 404, `runs.cancel ${on}`);
        await rejectsWith(bob.runs.wait(id, CHATBOT, { input: { messages: [{ role: "user", content: "intrude" }] } }), 404, `runs.wait ${on}`);
        await rejectsWith(bob.threads.delete(id), 404, `threads.delete ${on}`);
        assert.deepEqual(await bob.threads.search({ metadata: { owner } }), [], `threads.search ${on}`);
        assert.equal(await bob.threads.count({ metadata: { owner } }), 0, `threads.count ${on}`);
      }

      // Nothing bob sent changed alice's thread, read from either worker.
      for (const worker of workers) {
        const alice = worker.calls.sdk(USERS.alice);
        const got = await alice.threads.get(thread.thread_id);
        assert.equal(got.metadata?.owner, owner);
        assert.equal(got.status, "idle");
        assert.deepEqual(contentsOf((await alice.threads.getState(thread.thread_id)).values).slice(0, 1), ["secret"]);
        assert.equal(messagesOf((await alice.threads.getState(thread.thread_id)).values).length, 2);
        assert.deepEqual(
          (await alice.runs.list(thread.thread_id)).map((each) => each.run_id),
          [run.run_id],
        );
      }

      await assertPinned(cluster, workers);
    } finally {
      await unpin(pinsOf(workers));
    }
  });
});
