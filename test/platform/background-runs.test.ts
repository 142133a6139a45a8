// Background runs through LangGraph's own SDK against the real service, on each backend: a run
// accepted at once and executed with no client (joined, listed, its events replayed), the multitask
// strategies (reject, enqueue in order of arrival, interrupt, rollback), a delayed run, the cancel of a queued
// run, another user's runs out of reach, and hostile input. Runs longer than REQUEST_TIMEOUT and the
// background deadline are in the last describe.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { Redis } from "ioredis";
import { Client } from "@langchain/langgraph-sdk";
import { RUN_QUEUE } from "../../src/background/bullmq-engine.ts";
import { SIGNATURE_HEADER, verifyWebhookSignature } from "../../src/background/webhook-delivery.ts";
import { gate } from "../fixtures/gated-agent.ts";
import { call, startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";
import { REDIS_URL } from "../helpers/redis.ts";
import { memoryBackend, postgresBackend, sqliteBackend, type BackendUnderTest } from "../http/history-backends.ts";

const GATED = "gated-agent";
const STEPS = "steps-agent";
const AGENTS = JSON.stringify(["./test/fixtures/gated-agent.ts:gatedAgent", "./test/fixtures/run-control-agents.ts:stepsAgent"]);

type Message = { type: string; content: unknown };
const messagesOf = (values: unknown): Message[] => (values as { messages?: Message[] } | undefined)?.messages ?? [];
const human = (text: string) => ({ messages: [{ role: "user", content: text }] });

/** Until `check` holds, looking again after each turn of the event loop (a bound catches a hang). */
async function until(check: () => boolean | Promise<boolean>, what: string, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** PostgreSQL with REDIS_URL: the BullMQ engine carries the runs. */
function postgresWithRedis(): BackendUnderTest & { readonly label: string } {
  const backend = postgresBackend();
  const prefix = `agenthost-test:${randomUUID()}`;
  return {
    ...backend,
    label: "serverdb, BullMQ over Redis",
    env: { ...backend.env, REDIS_URL, REDIS_KEY_PREFIX: prefix },
    cleanup: async () => {
      await backend.cleanup();
      const redis = new Redis(REDIS_URL);
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length) await redis.del(...keys);
      redis.disconnect();
    },
  };
}

/** Every backend, and the two engines: the checkpoint database's queue (the first three) and BullMQ. */
const ENGINES: ReadonlyArray<() => BackendUnderTest & { readonly label?: string }> = [memoryBackend, sqliteBackend, postgresBackend, postgresWithRedis];

for (const make of ENGINES) {
  describe(`background runs through the SDK (${make().label ?? make().name})`, { concurrency: false }, () => {
    let backend: BackendUnderTest;
    let service: RunningService;
    let client: Client;
    let bob: Client;

    before(async () => {
      backend = make();
      service = await startService({
        ...backend.env,
        AGENT_PATHS: AGENTS,
        AUTH_USERS: JSON.stringify({ alice: "alice-token", bob: "bob-token" }),
        BACKGROUND_POLL_INTERVAL: "0.2",
      });
      client = new Client({ apiUrl: service.url, apiKey: "alice-token" });
      bob = new Client({ apiUrl: service.url, apiKey: "bob-token" });
    });
    after(async () => {
      gate.open();
      await service?.close();
      await backend?.cleanup();
    });

    test("a run joined to its end leaves its thread free at once: the next run (multitask reject) is accepted, turn after turn", async () => {
      const thread = await client.threads.create();
      for (let turn = 1; turn <= 8; turn++) {
        const run = await client.runs.create(thread.thread_id, STEPS, { input: human(`turn ${turn}`), config: { configurable: { steps: 1 } } });
        const values = await client.runs.join(thread.thread_id, run.run_id);
        assert.equal(messagesOf(values).filter((message) => message.content === `turn ${turn}`).length, 1);
      }
    });

    test("a run is accepted at once, executes with no client, and is joined; its record and its events stay", async () => {
      const thread = await client.threads.create();
      const run = await client.runs.create(thread.thread_id, GATED, { input: human("in the background"), streamMode: ["values", "messages-tuple"] });
      assert.ok(run.status === "pending" || run.status === "running", run.status);
      assert.equal(run.thread_id, thread.thread_id);
      await until(() => gate.waiting === 1, "the run waits at the gate");
      assert.equal((await client.runs.get(thread.thread_id, run.run_id)).status, "running");
      assert.equal((await client.threads.get(thread.thread_id)).status, "busy");
      gate.open();
      const values = await client.runs.join(thread.thread_id, run.run_id);
      assert.deepEqual(messagesOf(values).map((message) => message.content), ["in the background", "through the gate"]);
      assert.equal((await client.runs.get(thread.thread_id, run.run_id)).status, "success");
      assert.equal((await client.threads.get(thread.thread_id)).status, "idle");
      assert.deepEqual((await client.runs.list(thread.thread_id)).map((listed) => listed.run_id), [run.run_id]);
      const events = [];
      for await (const part of client.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: "-1" })) events.push(part);
      assert.equal(events[0]?.event, "metadata");
      assert.deepEqual(events[0]?.data, { run_id: run.run_id, thread_id: thread.thread_id, attempt: 1 });
      assert.ok(events.some((part) => part.event === "messages"), "the messages-tuple chunks were recorded");
      assert.deepEqual(messagesOf(events.filter((part) => part.event === "values").at(-1)?.data).at(-1)?.content, "through the gate");
      // A finished run's record may be deleted; a running one may not (above, it had to be cancelled first).
      await client.runs.delete(thread.thread_id, run.run_id);
      assert.deepEqual(await client.runs.list(thread.thread_id), []);
    });

    test("reject refuses a second run while one is pending or running; enqueue runs them one after another in order of arrival", async () => {
      const thread = await client.threads.create();
      const first = await client.runs.create(thread.thread_id, GATED, { input: human("one") });
      await until(() => gate.waiting === 1, "the first run waits at the gate");
      const refused = await call(service, "POST", `/threads/${thread.thread_id}/runs`, { assistant_id: GATED, input: human("refused") }, "alice-token");
      assert.equal(refused.status, 409);
      assert.equal(((await refused.json()) as { error_code: string }).error_code, "conversation_busy");
      const second = await client.runs.create(thread.thread_id, GATED, { input: human("two"), multitaskStrategy: "enqueue" });
      const third = await client.runs.create(thread.thread_id, GATED, { input: human("three"), multitaskStrategy: "enqueue" });
      assert.equal((await client.runs.get(thread.thread_id, second.run_id)).status, "pending");
      assert.equal((await client.runs.get(thread.thread_id, third.run_id)).status, "pending");
      const statuses = async () => Promise.all([first, second, third].map(async (run) => (await client.runs.get(thread.thread_id, run.run_id)).status));
      await until(async () => {
        if (gate.waiting > 1) throw new Error("two runs of one thread executed at once");
        gate.open();
        return (await statuses()).every((status) => status === "success");
      }, "the three runs succeeded");
      const state = await client.threads.getState(thread.thread_id);
      assert.deepEqual(
        messagesOf(state.values).map((message) => message.content),
        ["one", "through the gate", "two", "through the gate", "three", "through the gate"],
      );
    });

    test("interrupt stops the running run (interrupted, its input kept) and drops the queued ones, then executes", async () => {
      const thread = await client.threads.create();
      const first = await client.runs.create(thread.thread_id, GATED, { input: human("first") });
      await until(() => gate.waiting === 1, "the first run waits at the gate");
      const queued = await client.runs.create(thread.thread_id, GATED, { input: human("queued"), multitaskStrategy: "enqueue" });
      const urgent = await client.runs.create(thread.thread_id, GATED, { input: human("urgent"), multitaskStrategy: "interrupt" });
      assert.equal((await client.runs.get(thread.thread_id, queued.run_id)).status, "interrupted");
      await until(async () => (await client.runs.get(thread.thread_id, first.run_id)).status === "interrupted", "the first run ended interrupted");
      await until(() => gate.waiting === 1, "the urgent run waits at the gate");
      gate.open();
      await client.runs.join(thread.thread_id, urgent.run_id);
      assert.equal((await client.runs.get(thread.thread_id, urgent.run_id)).status, "success");
      const contents = messagesOf((await client.threads.getState(thread.thread_id)).values).map((message) => message.content);
      assert.deepEqual(contents, ["first", "urgent", "through the gate"]);
    });

    test("rollback stops the running run and deletes it and the queued ones, their thread as they found it, then executes", async () => {
      const thread = await client.threads.create();
      const kept = await client.runs.create(thread.thread_id, GATED, { input: human("kept") });
      await until(() => gate.waiting === 1, "the kept run waits at the gate");
      gate.open();
      await client.runs.join(thread.thread_id, kept.run_id);
      const head = (await client.threads.getState(thread.thread_id)).checkpoint.checkpoint_id;
      const doomed = await client.runs.create(thread.thread_id, GATED, { input: human("doomed") });
      await until(() => gate.waiting === 1, "the doomed run waits at the gate");
      const queued = await client.runs.create(thread.thread_id, GATED, { input: human("queued"), multitaskStrategy: "enqueue" });
      const urgent = await client.runs.create(thread.thread_id, GATED, { input: human("urgent"), multitaskStrategy: "rollback" });
      // Answered once the doomed run has stopped and its writes are gone.
      for (const gone of [doomed, queued]) {
        await assert.rejects(client.runs.get(thread.thread_id, gone.run_id), (error: { status?: number }) => error.status === 404);
      }
      await until(() => gate.waiting === 1, "the urgent run waits at the gate");
      gate.open();
      await client.runs.join(thread.thread_id, urgent.run_id);
      const contents = messagesOf((await client.threads.getState(thread.thread_id)).values).map((message) => message.content);
      assert.deepEqual(contents, ["kept", "through the gate", "urgent", "through the gate"]);
      // No checkpoint of the doomed run is left: the urgent run went on from the head the doomed one found.
      const history = await client.threads.getHistory(thread.thread_id, { limit: 100 });
      assert.ok(history.some((state) => state.checkpoint.checkpoint_id === head));
      for (const state of history) assert.ok(!messagesOf(state.values).some((message) => message.content === "doomed"), "a checkpoint of the doomed run is left");
      assert.deepEqual((await client.runs.list(thread.thread_id)).map((run) => run.run_id), [urgent.run_id, kept.run_id]);
    });

    test("cancel with action rollback deletes the run and takes its thread back to where it found it", async () => {
      const thread = await client.threads.create();
      const run = await client.runs.create(thread.thread_id, GATED, { input: human("take it back") });
      await until(() => gate.waiting === 1, "the run waits at the gate");
      await client.runs.cancel(thread.thread_id, run.run_id, false, "rollback");
      await assert.rejects(client.runs.get(thread.thread_id, run.run_id), (error: { status?: number }) => error.status === 404);
      assert.deepEqual(messagesOf((await client.threads.getState(thread.thread_id)).values), []);
      assert.deepEqual(await client.threads.getHistory(thread.thread_id), []);
      assert.equal((await client.threads.get(thread.thread_id)).status, "idle");
      // The thread goes on as if the run had never been: the next run's messages are stored afresh.
      const next = await client.runs.create(thread.thread_id, GATED, { input: human("again") });
      await until(() => gate.waiting === 1, "the next run waits at the gate");
      gate.open();
      const values = await client.runs.join(thread.thread_id, next.run_id);
      assert.deepEqual(messagesOf(values).map((message) => message.content), ["again", "through the gate"]);
    });

    test("a streamed run with rollback takes back the background run on its thread", async () => {
      const thread = await client.threads.create();
      const run = await client.runs.create(thread.thread_id, GATED, { input: human("in the way") });
      await until(() => gate.waiting === 1, "the run waits at the gate");
      const waited = client.runs.wait(thread.thread_id, GATED, { input: human("instead"), multitaskStrategy: "rollback" });
      // The run in the way is deleted before the streamed one starts.
      await until(async () => {
        try {
          await client.runs.get(thread.thread_id, run.run_id);
          return false;
        } catch (error) {
          return (error as { status?: number }).status === 404;
        }
      }, "the run in the way was rolled back");
      await until(() => gate.waiting === 1, "the streamed run waits at the gate");
      gate.open();
      assert.deepEqual(messagesOf(await waited).map((message) => message.content), ["instead", "through the gate"]);
    });

    test("after_seconds delays a run; a queued run cancelled ends interrupted and never executes", async () => {
      const thread = await client.threads.create();
      const later = await client.runs.create(thread.thread_id, STEPS, { input: human("much later"), afterSeconds: 3600, multitaskStrategy: "enqueue" });
      assert.equal(later.status, "pending");
      await client.runs.cancel(thread.thread_id, later.run_id, true);
      assert.equal((await client.runs.get(thread.thread_id, later.run_id)).status, "interrupted");

      const accepted = Date.now();
      const soon = await client.runs.create(thread.thread_id, STEPS, { input: human("soon"), afterSeconds: 1, config: { configurable: { steps: 1 } } });
      assert.equal((await client.runs.get(thread.thread_id, soon.run_id)).status, "pending");
      const values = await client.runs.join(thread.thread_id, soon.run_id);
      assert.ok(Date.now() - accepted >= 1000, "not before its second");
      assert.deepEqual(messagesOf(values).map((message) => message.content), ["soon", "step 1", "finished"]);
    });

    test("a deleted thread's queued run goes with it: the thread made again under its id is not busy, and the run never executes", async () => {
      const thread = await client.threads.create();
      const later = await client.runs.create(thread.thread_id, STEPS, { input: human("never"), afterSeconds: 3600 });
      await client.threads.delete(thread.thread_id);
      await client.threads.create({ threadId: thread.thread_id });
      await assert.rejects(client.runs.get(thread.thread_id, later.run_id), /404/);
      const now = await client.runs.create(thread.thread_id, STEPS, { input: human("now"), config: { configurable: { steps: 1 } } });
      const values = await client.runs.join(thread.thread_id, now.run_id);
      assert.deepEqual(messagesOf(values).map((message) => message.content), ["now", "step 1", "finished"]);
      assert.deepEqual((await client.runs.list(thread.thread_id)).map((run) => run.run_id), [now.run_id]);
    });

    test("a stateless background run (POST /runs) executes on a thread of its own: kept with on_completion keep, else deleted after", async () => {
      // The SDK's type names other values ("complete", "continue") than LangGraph's servers accept ("delete", "keep").
      const kept = await client.runs.create(null, STEPS, { input: human("alone"), config: { configurable: { steps: 1 } }, onCompletion: "keep" as never });
      const values = await client.runs.join(kept.thread_id, kept.run_id);
      assert.deepEqual(messagesOf(values).map((message) => message.content), ["alone", "step 1", "finished"]);
      assert.equal((await client.runs.get(kept.thread_id, kept.run_id)).status, "success");
      const gone = await client.runs.create(null, STEPS, { input: human("forget me"), config: { configurable: { steps: 1 } } });
      await until(async () => {
        try {
          await client.threads.get(gone.thread_id);
          return false;
        } catch (error) {
          return (error as { status?: number }).status === 404;
        }
      }, "the run's own thread was deleted after it");
    });

    test("another user's background runs are out of reach: not found, not listed, not cancelled", async () => {
      const thread = await client.threads.create();
      const run = await client.runs.create(thread.thread_id, GATED, { input: human("mine") });
      await until(() => gate.waiting === 1, "the run waits at the gate");
      for (const attempt of [
        () => bob.runs.get(thread.thread_id, run.run_id),
        () => bob.runs.list(thread.thread_id),
        () => bob.runs.cancel(thread.thread_id, run.run_id),
        () => bob.runs.create(thread.thread_id, GATED, { input: human("theirs"), multitaskStrategy: "enqueue" }),
        () => bob.runs.join(thread.thread_id, run.run_id),
      ]) {
        await assert.rejects(attempt(), (error: unknown) => (error as { status?: number }).status === 404);
      }
      assert.equal((await client.runs.get(thread.thread_id, run.run_id)).status, "running");
      gate.open();
      await client.runs.join(thread.thread_id, run.run_id);
      assert.deepEqual((await client.runs.list(thread.thread_id)).map((listed) => listed.status), ["success"]);
    });

    test("hostile input: a negative or absurd delay, an unknown assistant and an unserved option are refused, nothing queued", async () => {
      const thread = await client.threads.create();
      const post = (body: Record<string, unknown>) => call(service, "POST", `/threads/${thread.thread_id}/runs`, body, "alice-token");
      for (const after_seconds of [-1, 1e12, "soon"]) assert.equal((await post({ assistant_id: STEPS, input: null, after_seconds })).status, 422);
      assert.equal((await post({ assistant_id: "no-such-agent", input: null })).status, 404);
      const unserved = await post({ assistant_id: STEPS, input: null, durability: "exit" });
      assert.equal(unserved.status, 422);
      assert.equal(((await unserved.json()) as { error_code?: string }).error_code, "not_supported");
      assert.deepEqual(await client.runs.list(thread.thread_id), []);
    });
  });
}

describe("background runs outlive REQUEST_TIMEOUT and end at BACKGROUND_RUN_TIMEOUT", () => {
  let service: RunningService;
  let client: Client;

  before(async () => {
    service = await startService({ AGENT_PATHS: AGENTS, REQUEST_TIMEOUT: "1", BACKGROUND_RUN_TIMEOUT: "8", BACKGROUND_POLL_INTERVAL: "0.2" });
    client = new Client({ apiUrl: service.url, apiKey: TEST_TOKEN });
  });
  after(() => service?.close());

  test("a run of three 700 ms steps succeeds under a 1 s REQUEST_TIMEOUT; one that waits a minute ends timeout", async () => {
    const long = await client.threads.create();
    const run = await client.runs.create(long.thread_id, STEPS, { input: human("take your time"), config: { configurable: { steps: 3, gap_ms: 700 } } });
    const stuck = await client.threads.create();
    const waiting = await client.runs.create(stuck.thread_id, STEPS, { input: human("wait"), config: { configurable: { steps: 1, sleep_ms: 60_000 } } });
    // A join waits within its own request's deadline, and answers as a run stopped by it would.
    const joined = await call(service, "GET", `/threads/${stuck.thread_id}/runs/${waiting.run_id}/join`);
    assert.equal(joined.status, 504);
    assert.equal(((await joined.json()) as { error_code: string }).error_code, "request_timeout");
    await until(async () => (await client.runs.get(long.thread_id, run.run_id)).status === "success", "the long run succeeded");
    const contents = messagesOf((await client.threads.getState(long.thread_id)).values).map((message) => message.content);
    assert.deepEqual(contents, ["take your time", "step 1", "step 2", "step 3", "finished"]);
    await until(async () => (await client.runs.get(stuck.thread_id, waiting.run_id)).status === "timeout", "the stuck run timed out", 60_000);
    assert.equal((await client.threads.get(stuck.thread_id)).status, "idle");
  });
});

describe("a run claimed again after its worker stopped, which that worker ended meanwhile, is not run again", () => {
  let backend: BackendUnderTest;
  let service: RunningService;
  let client: Client;

  before(async () => {
    backend = sqliteBackend();
    service = await startService({ ...backend.env, AGENT_PATHS: AGENTS, BACKGROUND_RUNS_PER_WORKER: "1", BACKGROUND_POLL_INTERVAL: "0.05" });
    client = new Client({ apiUrl: service.url, apiKey: TEST_TOKEN });
  });
  after(async () => {
    gate.open();
    await service?.close();
    await backend?.cleanup();
  });

  test("its record, read before the thread's lock, said running; read again under the lock it has ended: the retry neither runs it nor writes it", async () => {
    const { platform: records, runQueue } = service.runtime.checkpoints;
    // The service's one slot held by a run at the gate, so the next run stays in the queue for the test.
    const holder = await client.threads.create();
    const held = await client.runs.create(holder.thread_id, GATED, { input: human("hold the slot") });
    await until(() => gate.waiting === 1, "the slot is held");
    const thread = await client.threads.create();
    const run = await client.runs.create(thread.thread_id, STEPS, { input: human("once only"), config: { configurable: { steps: 1 } } });
    // Its first attempt, on a worker that is about to stop: claimed under a lease that runs out at
    // once, and marked running.
    const [claimed] = await runQueue.claim("a-worker-that-stopped", Date.now(), Date.now() + 1, 1);
    assert.equal(claimed?.runId, run.run_id);
    await records.setRunStatus(claimed.userId, claimed.threadId, run.run_id, "running", Date.now());
    // That worker comes back in time and ends the run just after the retry has read its record.
    const read = records.getRunWithThread.bind(records);
    records.getRunWithThread = async (userId, threadId, runId) => {
      const found = await read(userId, threadId, runId);
      if (runId === run.run_id) await records.runEnded(userId, threadId, runId, "success", "idle", Date.now());
      return found;
    };
    try {
      const mark = service.logs.length;
      gate.open();
      await client.runs.join(holder.thread_id, held.run_id);
      await until(async () => (await runQueue.onThread(claimed.userId, claimed.threadId)).length === 0, "the retry leaves the queue");
      const retries = (await service.runtime.metrics.backgroundRetries.get()).values.reduce((sum, value) => sum + value.value, 0);
      assert.equal(retries, 1, "claimed again, as attempt 2");
      const lines = service.logs.slice(mark).filter((line) => line.run_id === run.run_id);
      assert.deepEqual(lines.map((line) => line.msg), [], "neither resumed nor ended by the retry");
    } finally {
      records.getRunWithThread = read;
    }
    assert.equal((await client.runs.get(thread.thread_id, run.run_id)).status, "success");
    assert.deepEqual(messagesOf((await client.threads.getState(thread.thread_id)).values), [], "nothing run again");
  });
});

describe("a Platform run on a busy thread is refused at once, whatever THREAD_QUEUE_TIMEOUT", () => {
  let service: RunningService;
  let client: Client;

  before(async () => {
    service = await startService({ AGENT_PATHS: AGENTS, THREAD_QUEUE_TIMEOUT: "60" });
    client = new Client({ apiUrl: service.url, apiKey: TEST_TOKEN });
  });
  after(async () => {
    gate.open();
    await service?.close();
  });

  test("reject answers 409 while the first run still waits, also for a run sent from the checkpoint the client saw; the thread does not fork", async () => {
    const thread = await client.threads.create();
    const first = client.runs.wait(thread.thread_id, GATED, { input: human("first") });
    await until(() => gate.waiting === 1, "the first run waits at the gate");
    const seen = await client.threads.getState(thread.thread_id);
    for (const extra of [{}, { checkpoint: seen.checkpoint }]) {
      const refused = await call(service, "POST", `/threads/${thread.thread_id}/runs/wait`, { assistant_id: GATED, input: human("second"), ...extra });
      assert.equal(refused.status, 409);
      assert.equal(((await refused.json()) as { error_code: string }).error_code, "conversation_busy");
      assert.equal(gate.waiting, 1, "answered while the first run still waits");
    }
    gate.open();
    await first;
    const history = await client.threads.getHistory(thread.thread_id, { limit: 50 });
    const contents = messagesOf(history[0]?.values).map((message) => message.content);
    assert.deepEqual(contents, ["first", "through the gate"]);
    assert.equal(new Set(history.map((state) => state.parent_checkpoint?.checkpoint_id ?? "")).size, history.length, "one branch");
  });
});

for (const make of ENGINES) {
  describe(`a run whose claim another attempt took while it ran writes no end, though no renewal told it so (${make().label ?? make().name})`, () => {
    let backend: BackendUnderTest;
    let service: RunningService;
    let client: Client;

    before(async () => {
      backend = make();
      // A lease no renewal comes within: only the run's own check at its end can find the claim gone.
      service = await startService({ ...backend.env, AGENT_PATHS: AGENTS, BACKGROUND_RUNS_PER_WORKER: "1", BACKGROUND_RUN_LEASE: "600" });
      client = new Client({ apiUrl: service.url, apiKey: TEST_TOKEN });
    });
    after(async () => {
      gate.open();
      await service?.close();
      await backend?.cleanup();
    });

    test("its graph ends, its record stays running for the attempt that holds it, and it says it lost its lease", async () => {
      const thread = await client.threads.create();
      const run = await client.runs.create(thread.thread_id, GATED, { input: human("whose end is it") });
      await until(() => gate.waiting === 1, "the run waits at the gate");
      // Another attempt holds the run now, as when this worker was away past its lease.
      const redisUrl = backend.env.REDIS_URL;
      if (redisUrl) {
        const redis = new Redis(redisUrl);
        await redis.set(`${backend.env.REDIS_KEY_PREFIX}:bull:${RUN_QUEUE}:${run.run_id}:lock`, "another-attempt", "PX", 600_000);
        redis.disconnect();
      } else {
        const { runQueue } = service.runtime.checkpoints;
        const [row] = await runQueue.onThread(service.runtime.config.AUTH_SERVICE_USER_ID, thread.thread_id);
        assert.equal(row?.runId, run.run_id);
        await runQueue.release(row.runId, row.leaseOwner!, Date.now(), false);
        const [taken] = await runQueue.claim("another-worker", Date.now(), Date.now() + 600_000, 1);
        assert.equal(taken?.runId, run.run_id, "claimed by another worker");
      }
      const mark = service.logs.length;
      gate.open();
      await until(
        () => service.logs.slice(mark).some((line) => line.msg === "background run lost its lease: another attempt takes it over" && line.run_id === run.run_id),
        "the run finds its claim gone",
      );
      assert.equal((await client.runs.get(thread.thread_id, run.run_id)).status, "running", "its end is left to the attempt that holds it");
      assert.equal(service.logs.some((line) => line.msg === "background run ended" && line.run_id === run.run_id), false);
    });
  });
}

describe("background runs are measured", () => {
  let service: RunningService;
  let client: Client;

  before(async () => {
    service = await startService({ AGENT_PATHS: AGENTS, BACKGROUND_POLL_INTERVAL: "0.2" });
    client = new Client({ apiUrl: service.url, apiKey: TEST_TOKEN });
  });
  after(async () => {
    gate.open();
    await service?.close();
  });

  /** One sample of the worker's registry, by name and labels. */
  const sample = async (name: string, labels: Record<string, string> = {}): Promise<number> => {
    const metrics = await service.runtime.metrics.registry.getMetricsAsJSON();
    const found = metrics.find((metric) => metric.name === name) as { values: Array<{ value: number; labels: Record<string, unknown>; metricName?: string }> } | undefined;
    const values = found?.values.filter((value) => Object.entries(labels).every(([key, want]) => value.labels[key] === want) && (value.metricName === undefined || value.metricName === name || value.metricName === `${name}_count`)) ?? [];
    return values.reduce((sum, value) => sum + value.value, 0);
  };

  test("queued, executing, final statuses and the queue wait", async () => {
    const thread = await client.threads.create();
    const running = await client.runs.create(thread.thread_id, GATED, { input: human("measured") });
    await until(() => gate.waiting === 1, "the run waits at the gate");
    await client.runs.create(thread.thread_id, GATED, { input: human("behind it"), multitaskStrategy: "enqueue" });
    assert.equal(await sample("agenthost_background_runs_executing"), 1);
    assert.equal(await sample("agenthost_background_runs_queued"), 1);
    assert.equal(await sample("agenthost_background_run_queue_wait_seconds"), 1, "one first start observed");
    const stopped = await client.runs.create((await client.threads.create()).thread_id, STEPS, { input: human("stop me"), config: { configurable: { steps: 1, sleep_ms: 60_000 } } });
    await until(async () => (await client.runs.get(stopped.thread_id, stopped.run_id)).status === "running", "the second thread's run started");
    await client.runs.cancel(stopped.thread_id, stopped.run_id, true);
    await until(async () => gate.waiting > 0 || (await client.runs.get(thread.thread_id, running.run_id)).status !== "running", "a gate to open");
    await until(async () => {
      gate.open();
      return (await sample("agenthost_background_runs_total", { status: "success" })) === 2;
    }, "both runs of the first thread succeeded");
    assert.equal(await sample("agenthost_background_runs_total", { status: "interrupted" }), 1);
    assert.equal(await sample("agenthost_background_runs_executing"), 0);
    assert.equal(await sample("agenthost_background_runs_queued"), 0);
    assert.equal(await sample("agenthost_background_run_retries_total"), 0);
  });
});

describe("a background run's webhook", () => {
  const SECRET = "webhook-secret-for-the-tests-0123456789abcdef";
  let backend: BackendUnderTest;
  let service: RunningService;
  let client: Client;
  let receiver: http.Server;
  let receiverUrl: string;
  const received: Array<{ body: string; signature: string | undefined }> = [];

  before(async () => {
    receiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        received.push({ body: Buffer.concat(chunks).toString("utf8"), signature: req.headers[SIGNATURE_HEADER] as string | undefined });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/agenthost`;
    backend = sqliteBackend();
    service = await startService({
      ...backend.env,
      AGENT_PATHS: AGENTS,
      BACKGROUND_POLL_INTERVAL: "0.2",
      WEBHOOK_SIGNING_SECRET: SECRET,
      WEBHOOK_ALLOWED_HOSTS: "127.0.0.1",
    });
    client = new Client({ apiUrl: service.url, apiKey: TEST_TOKEN });
  });
  after(async () => {
    await service?.close();
    await backend?.cleanup();
    receiver?.closeAllConnections();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  });

  test("on its end a signed POST with the run and its values reaches the receiver; an internal address is refused", async () => {
    const thread = await client.threads.create();
    const run = await client.runs.create(thread.thread_id, STEPS, { input: human("call me back"), config: { configurable: { steps: 1 } }, webhook: receiverUrl });
    await until(() => received.length === 1, "the webhook arrived");
    const [delivery] = received;
    assert.ok(verifyWebhookSignature(SECRET, delivery!.signature, delivery!.body), "the signature verifies");
    assert.ok(!verifyWebhookSignature("another secret of the same length, 0123456789", delivery!.signature, delivery!.body));
    const payload = JSON.parse(delivery!.body) as { run_id: string; thread_id: string; status: string; values: unknown };
    assert.equal(payload.run_id, run.run_id);
    assert.equal(payload.thread_id, thread.thread_id);
    assert.equal(payload.status, "success");
    assert.deepEqual(messagesOf(payload.values).map((message) => message.content), ["call me back", "step 1", "finished"]);

    for (const webhook of ["http://10.0.0.7/hook", "http://169.254.169.254/latest/meta-data", "http://localhost:9/x", "ftp://127.0.0.1/x"]) {
      const refused = await call(service, "POST", `/threads/${thread.thread_id}/runs`, { assistant_id: STEPS, input: null, webhook });
      assert.equal(refused.status, 422, webhook);
    }
    assert.equal((await client.runs.list(thread.thread_id)).length, 1, "nothing queued for the refused ones");
  });
});
