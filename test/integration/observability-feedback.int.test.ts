// Observability backends against small local servers speaking each backend's ingestion API:
// traces with trace id = run id (user and thread on the trace), feedback as a Langfuse score or a
// LangSmith feedback record, inline delivery failures (503), and BullMQ delivery through an outage.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { after, before, describe, test } from "node:test";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { FEEDBACK_QUEUE, feedbackJobId } from "../../src/feedback/queue.ts";
import type { FeedbackRecord } from "../../src/observability/backends/types.ts";
import { call, startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";
import { eventually, fakeLangfuse, fakeLangsmith, otlpSpans, type FakeBackend } from "./observability-fakes.ts";
import { REDIS_URL } from "../helpers/redis.ts";

const SIGNING = "feedback-signing-secret-0123456789abcdef";
const ALICE = "alice-token-0123456789";
const tokenMode = { AUTH_MODE: "token", AUTH_USERS: JSON.stringify({ alice: ALICE }), FEEDBACK_SIGNING_SECRET: SIGNING };
const langfuseEnv = (fake: FakeBackend) => ({
  OBSERVABILITY_BACKEND: "langfuse",
  LANGFUSE_PUBLIC_KEY: "pk-lf-test",
  LANGFUSE_SECRET_KEY: "sk-lf-test",
  LANGFUSE_BASE_URL: fake.url,
});

type Message = { run_id: string; feedback_token?: string };

async function invoke(service: RunningService, thread: string): Promise<Message> {
  const res = await call(service, "POST", "/chatbot-agent/invoke", { input: { message: "hello" }, thread_id: thread }, ALICE);
  assert.equal(res.status, 200);
  return (await res.json()) as Message;
}

function assertNothingSecret(fake: FakeBackend, proof: string | undefined): void {
  const sent = fake.everything();
  for (const secret of [TEST_TOKEN, ALICE, SIGNING, ...(proof ? [proof] : [])]) {
    assert.equal(sent.includes(secret), false, "a secret reached the observability backend");
  }
}

describe("Langfuse", () => {
  let fake: FakeBackend;
  let service: RunningService;
  before(async () => {
    fake = await fakeLangfuse();
    service = await startService({ ...tokenMode, ...langfuseEnv(fake) });
  });
  after(async () => {
    await service.close();
    await fake.close();
  });

  test("a run is one trace whose id is the run id, with its user and thread", async () => {
    const message = await invoke(service, "lf-thread");
    await service.runtime.observability.flush();
    const traceId = message.run_id.replace(/-/g, "");
    const spans = await eventually(() => {
      const found = otlpSpans(fake.to("/api/public/otel/v1/traces")).filter((s) => s.traceId === traceId);
      return found.length ? found : undefined;
    }, 10_000, "spans of the run");
    const root = spans.find((s) => s.attributes["user.id"] !== undefined);
    assert.ok(root, "the root observation carries the trace attributes");
    assert.equal(root.name, "chatbot-agent");
    assert.equal(root.attributes["user.id"], "alice");
    assert.equal(root.attributes["session.id"], "lf-thread");
    assert.ok(spans.some((s) => s.attributes["langfuse.observation.type"] === "generation"), "the model call is a generation");
    const auth = fake.to("/api/public/otel")[0]!.headers.authorization;
    assert.equal(auth, `Basic ${Buffer.from("pk-lf-test:sk-lf-test").toString("base64")}`);
    assertNothingSecret(fake, message.feedback_token);
  });

  test("feedback becomes a score on the run's trace; metadata cannot redirect it", async () => {
    const message = await invoke(service, "lf-feedback");
    const res = await call(
      service,
      "POST",
      "/chatbot-agent/feedback",
      {
        run_id: message.run_id,
        key: "thumbs",
        score: 0.5,
        comment: "helpful",
        feedback_token: message.feedback_token,
        trace_id: "0".repeat(32),
        traceId: "0".repeat(32),
        observation_id: "evil",
        id: "evil",
        channel: "web",
      },
      ALICE,
    );
    assert.equal(res.status, 201);
    const answer = (await res.json()) as { feedback_id: string; delivery: string; detail?: string };
    assert.equal(answer.delivery, "delivered");
    assert.equal(answer.detail, undefined, "only skipped feedback carries a detail");
    const scores = fake.to("/api/public/scores").map((r) => JSON.parse(r.body.toString("utf8")) as Record<string, unknown>);
    const score = scores.find((s) => s.id === answer.feedback_id);
    assert.ok(score, "the score arrived under the feedback id");
    assert.equal(score.traceId, message.run_id.replace(/-/g, ""));
    assert.equal(score.name, "thumbs");
    assert.equal(score.value, 0.5);
    assert.equal(score.comment, "helpful");
    assert.equal(score.observationId, undefined);
    assert.deepEqual(score.metadata, { channel: "web", agent_id: "chatbot-agent", user_id: "alice", run_id: message.run_id });
    assertNothingSecret(fake, message.feedback_token);
  });

  test("without Redis, a backend failure answers 503 and is logged", async () => {
    const message = await invoke(service, "lf-down");
    fake.down = true;
    try {
      const res = await call(service, "POST", "/chatbot-agent/feedback", { run_id: message.run_id, key: "thumbs", score: 1, feedback_token: message.feedback_token }, ALICE);
      assert.equal(res.status, 503);
      assert.equal(((await res.json()) as { error_code: string }).error_code, "feedback_unavailable");
      assert.ok(service.logs.some((l) => l.msg === "feedback delivery failed" && l.run_id === message.run_id));
    } finally {
      fake.down = false;
    }
    const retry = await call(service, "POST", "/chatbot-agent/feedback", { run_id: message.run_id, key: "thumbs", score: 1, feedback_token: message.feedback_token }, ALICE);
    assert.equal(retry.status, 201);
  });
});

describe("LangSmith", () => {
  let fake: FakeBackend;
  let service: RunningService;
  before(async () => {
    fake = await fakeLangsmith();
    service = await startService({
      ...tokenMode,
      OBSERVABILITY_BACKEND: "langsmith",
      LANGSMITH_API_KEY: "ls-test-key",
      LANGSMITH_ENDPOINT: fake.url,
      LANGSMITH_PROJECT: "agenthost-test",
    });
  });
  after(async () => {
    await service.close();
    await fake.close();
  });

  /** Runs posted by the tracer, whichever ingestion endpoint it chose. */
  async function postedRuns(): Promise<Array<Record<string, unknown>>> {
    const runs: Array<Record<string, unknown>> = [];
    for (const request of fake.received.filter((r) => r.status < 300 && r.method === "POST")) {
      if (request.path.startsWith("/runs/multipart")) {
        const form = await new Response(new Uint8Array(request.body), { headers: { "content-type": String(request.headers["content-type"]) } }).formData();
        // Parts are `post.<id>` (the run) and `post.<id>.<field>` (inputs, outputs, extra, ...).
        const byId = new Map<string, Record<string, unknown>>();
        const parts: Array<[string, FormDataEntryValue]> = [];
        form.forEach((value, name) => parts.push([name, value]));
        for (const [name, value] of parts) {
          const match = /^post\.([0-9a-f-]+)(?:\.(\w+))?$/.exec(name);
          if (!match) continue;
          const parsed: unknown = JSON.parse(typeof value === "string" ? value : await value.text());
          const run = byId.get(match[1]!) ?? {};
          if (match[2]) run[match[2]] = parsed;
          else Object.assign(run, parsed);
          byId.set(match[1]!, run);
        }
        runs.push(...byId.values());
      } else if (request.path.startsWith("/runs/batch")) {
        runs.push(...((JSON.parse(request.body.toString("utf8")) as { post?: Array<Record<string, unknown>> }).post ?? []));
      } else if (request.path === "/runs") {
        runs.push(JSON.parse(request.body.toString("utf8")) as Record<string, unknown>);
      }
    }
    return runs;
  }

  test("a run is traced with the run id as its trace, user and thread in the metadata", async () => {
    const message = await invoke(service, "ls-thread");
    const root = await eventually(async () => {
      await service.runtime.observability.flush();
      return (await postedRuns()).find((r) => r.id === message.run_id);
    }, 10_000, "the root run");
    assert.equal(root.trace_id, message.run_id);
    assert.equal(root.name, "chatbot-agent");
    assert.equal(root.session_name, "agenthost-test");
    const metadata = (root.extra as { metadata: Record<string, unknown> }).metadata;
    assert.equal(metadata.user_id, "alice");
    assert.equal(metadata.thread_id, "ls-thread");
    assert.equal(metadata.run_id, message.run_id);
    const children = (await postedRuns()).filter((r) => r.trace_id === message.run_id && r.id !== message.run_id);
    assert.ok(children.length > 0, "the graph's steps are children of the run");
    assert.equal(fake.received.find((r) => r.path.startsWith("/runs"))!.headers["x-api-key"], "ls-test-key");
    assertNothingSecret(fake, message.feedback_token);
  });

  test("feedback becomes a LangSmith feedback record on the run", async () => {
    const message = await invoke(service, "ls-feedback");
    const res = await call(
      service,
      "POST",
      "/chatbot-agent/feedback",
      { run_id: message.run_id, key: "correct", score: 1, comment: "yes", feedback_token: message.feedback_token, run_id_override: 1, source: "ui" },
      ALICE,
    );
    assert.equal(res.status, 201);
    const answer = (await res.json()) as { feedback_id: string };
    const records = fake.to("/feedback").map((r) => JSON.parse(r.body.toString("utf8")) as Record<string, unknown>);
    const record = records.find((r) => r.id === answer.feedback_id);
    assert.ok(record);
    assert.equal(record.run_id, message.run_id);
    assert.equal(record.key, "correct");
    assert.equal(record.score, 1);
    assert.equal(record.comment, "yes");
    assert.deepEqual((record.feedback_source as { metadata: unknown }).metadata, { run_id_override: 1, source: "ui", agent_id: "chatbot-agent", user_id: "alice" });
    assertNothingSecret(fake, message.feedback_token);
  });
});

describe("BullMQ delivery", () => {
  const prefix = `t-feedback-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  let fake: FakeBackend;
  before(async () => {
    fake = await fakeLangfuse();
  });
  after(async () => {
    await fake.close();
    const redis = new Redis(REDIS_URL);
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    await redis.quit();
  });

  const queueEnv = (name: string) => ({
    ...tokenMode,
    ...langfuseEnv(fake),
    REDIS_URL,
    REDIS_KEY_PREFIX: `${prefix}-${name}`,
    FEEDBACK_RETRY_DELAY: "0.05",
    FEEDBACK_MAX_ATTEMPTS: "50",
  });

  test("feedback queued during an outage is delivered once the backend is back, exactly once", async () => {
    const service = await startService(queueEnv("inproc"));
    try {
      const message = await invoke(service, "queued");
      fake.down = true;
      const body = { run_id: message.run_id, key: "thumbs", score: 1, feedback_token: message.feedback_token };
      const res = await call(service, "POST", "/chatbot-agent/feedback", body, ALICE);
      assert.equal(res.status, 201);
      const answer = (await res.json()) as { feedback_id: string; delivery: string; detail?: string };
      assert.equal(answer.delivery, "queued");
      assert.equal(answer.detail, undefined, "only skipped feedback carries a detail");
      const failedAttempts = () => fake.received.filter((r) => r.path.startsWith("/api/public/scores") && r.status === 503).length;
      await eventually(() => (failedAttempts() >= 2 ? true : undefined), 10_000, "retries during the outage");
      fake.down = false;
      const delivered = () => fake.to("/api/public/scores").filter((r) => (JSON.parse(r.body.toString("utf8")) as { id: string }).id === answer.feedback_id);
      await eventually(() => (delivered().length === 1 ? true : undefined), 15_000, "delivery after the outage");
      // The same feedback again is the same job: no second record.
      const again = await call(service, "POST", "/chatbot-agent/feedback", body, ALICE);
      assert.equal(again.status, 201);
      assert.equal(((await again.json()) as { feedback_id: string }).feedback_id, answer.feedback_id);
      // Nothing is left to deliver: the one job completed, and no job waits, runs or is scheduled.
      const queue = new Queue(FEEDBACK_QUEUE, { connection: { url: REDIS_URL }, prefix: `${prefix}-inproc:bull` });
      try {
        assert.equal(await queue.getJobState(feedbackJobId({ id: answer.feedback_id } as FeedbackRecord)), "completed");
        assert.deepEqual(await queue.getJobCounts("waiting", "active", "delayed", "prioritized", "completed"), {
          waiting: 0,
          active: 0,
          delayed: 0,
          prioritized: 0,
          completed: 1,
        });
      } finally {
        await queue.close();
      }
      assert.equal(delivered().length, 1);
      assert.ok(service.logs.some((l) => l.msg === "feedback delivery failed; will retry" && l.feedback_id === answer.feedback_id));
    } finally {
      fake.down = false;
      await service.close();
    }
  });

  test("workers/jobs.ts consumes the queue on its own", async () => {
    const env = queueEnv("process");
    const service = await startService(env, { consumeFeedbackQueue: false });
    const child = spawn(process.execPath, ["--import", "tsx", "workers/jobs.ts"], {
      env: { PATH: process.env.PATH, ...env, AUTH_SECRET: TEST_TOKEN, LOG_LEVEL: "info" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
    try {
      const message = await invoke(service, "by-process");
      const res = await call(service, "POST", "/chatbot-agent/feedback", { run_id: message.run_id, key: "stars", score: 4, feedback_token: message.feedback_token }, ALICE);
      assert.equal(res.status, 201);
      const { feedback_id } = (await res.json()) as { feedback_id: string };
      await eventually(
        () => (fake.to("/api/public/scores").some((r) => (JSON.parse(r.body.toString("utf8")) as { id: string }).id === feedback_id) ? true : undefined),
        20_000,
        "delivery by workers/jobs.ts",
      );
      await eventually(() => (/feedback delivered/.test(output) ? true : undefined), 10_000, "the consumer's log line");
    } finally {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
      await service.close();
    }
  });
});
