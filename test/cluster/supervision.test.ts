// The primary's supervision: configuration refused before any fork, a worker's startup refusal,
// a crash loop, and a worker with a stalled run (not live, replaced).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import path from "node:path";
import { test } from "node:test";
import { call, startService } from "../helpers/service.ts";
import { eventually, invoke, metric, ROOT, scrape, startCluster, TOKEN } from "./cluster-helper.ts";

const STUCK_AGENT = "./test/fixtures/agents/stuck-agent.ts:stuckAgent";

function runPrimary(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(path.join(ROOT, "bin/agenthost"), [], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", AGENTHOST_DOTENV: "off", USE_FAKE_MODEL: "true", AUTH_SECRET: TOKEN, HOST: "127.0.0.1", PORT: "0", METRICS_PORT: "0", ...env },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c));
    child.stderr.on("data", (c: Buffer) => (stderr += c));
    child.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

test("configuration errors stop the primary before any worker is forked, listing every problem", async () => {
  const result = await runPrimary({ WEB_CONCURRENCY: "0", THREAD_QUEUE_TIMEOUT: "soon" });
  assert.equal(result.code, 2);
  assert.match(result.stderr, /WEB_CONCURRENCY must be at least 1/);
  assert.match(result.stderr, /THREAD_QUEUE_TIMEOUT/);
  assert.doesNotMatch(result.stdout, /worker forked/);
});

test("a worker refusing to start (bad AGENT_PATHS) stops the primary with the worker's message", async () => {
  const result = await runPrimary({ WEB_CONCURRENCY: "1", AGENT_PATHS: JSON.stringify(["./no/such/agent.ts:agent"]) });
  assert.equal(result.code, 2);
  assert.match(result.stderr, /AGENT_PATHS entry "\.\/no\/such\/agent\.ts:agent" does not resolve/);
  assert.match(result.stdout, /a worker refused to start/);
});

test("more restarts than WORKER_RESTART_LIMIT within the window: the primary exits non-zero", async () => {
  const cluster = await startCluster({ WORKER_RESTART_LIMIT: "2", WORKER_RESTART_WINDOW: "60" });
  const mark = cluster.logs.length;
  for (const pid of cluster.workerPids()) process.kill(pid, "SIGKILL");
  const replacement = await cluster.waitForLog((l) => l.msg === "worker forked", 10_000, mark);
  process.kill(replacement.worker_pid as number, "SIGKILL");
  assert.equal(await cluster.exited, 1);
  assert.ok(cluster.logs.some((l) => l.msg === "workers are crash-looping; stopping"));
});

test("a run that will not finish aborting makes /health/live fail", async () => {
  const service = await startService({
    AGENT_PATHS: JSON.stringify([STUCK_AGENT]),
    REQUEST_TIMEOUT: "0.3",
    WORKER_STALL_TIMEOUT: "0.3",
  });
  try {
    assert.equal((await call(service, "GET", "/health/live")).status, 200);
    const stuck = call(service, "POST", "/stuck-agent/invoke", { input: { message: "hi" } }).catch(() => undefined);
    await eventually(async () => (await call(service, "GET", "/health/live")).status === 503, 5_000, "liveness fails");
    const body = (await (await call(service, "GET", "/health/live")).json()) as { status: string };
    assert.equal(body.status, "stalled");
    assert.equal(service.runtime.runTracker.stalledCount(), 1);
    void stuck;
  } finally {
    await service.close();
  }
});

test("the primary replaces a worker with a stalled run and counts it", async () => {
  const cluster = await startCluster({
    WEB_CONCURRENCY: "1",
    AGENT_PATHS: JSON.stringify([STUCK_AGENT]),
    REQUEST_TIMEOUT: "0.5",
    WORKER_STALL_TIMEOUT: "0.5",
  });
  try {
    const [stalledPid] = cluster.workerPids();
    const stuck = invoke(cluster.url, "stuck-agent", randomUUID(), "hi").catch((error: Error) => error);
    await cluster.waitForLog((l) => l.msg === "worker has stalled runs; replacing it", 10_000);
    await eventually(async () => metric(await scrape(cluster), "agenthost_worker_restarts_total", { reason: "stalled" }) === 1, 5_000, "counted");
    // The stalled worker drains and exits; its replacement serves.
    await cluster.waitForLog((l) => l.msg === "listening" && l.pid !== stalledPid, 30_000);
    await cluster.waitForLog((l) => l.msg === "replaced worker exited", 10_000);
    const served = await invoke(cluster.url, "chatbot-agent", randomUUID(), "hello");
    assert.equal(served.status, 200);
    await stuck;
    assert.equal(await cluster.stop("SIGTERM"), 0);
  } finally {
    await cluster.stop("SIGKILL");
  }
});

test("workers do not outlive a primary killed with SIGKILL", async () => {
  const cluster = await startCluster({});
  const workers = cluster.workerPids();
  assert.equal(workers.length, 2);
  await cluster.stop("SIGKILL");
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  await eventually(() => !workers.some(alive), 10_000, "workers exit when their primary is gone");
});

test("an uncaught exception in a worker is one JSON log line with a project-relative stack; the worker is replaced", async () => {
  const cluster = await startCluster({ WEB_CONCURRENCY: "1", AGENT_PATHS: JSON.stringify(["./test/fixtures/agents/crashing-agent.ts:crashingAgent"]) });
  try {
    const mark = cluster.logs.length;
    // The crash may come before or after the answer is written; only the log matters here.
    await invoke(cluster.url, "crashing-agent", randomUUID(), "hi").catch(() => undefined);
    const fatal = await cluster.waitForLog((l) => l.msg === "uncaught exception", 10_000, mark);
    assert.equal(fatal.level, 60);
    const err = fatal.err as { type: string; message: string; stack: string };
    assert.equal(err.type, "Error");
    assert.equal(err.message, "a bug in an agent's timer");
    assert.match(err.stack, /test\/fixtures\/agents\/crashing-agent\.ts/);
    assert.ok(!err.stack.includes(ROOT), "stack paths are relative to the project");
    await cluster.waitForLog((l) => l.msg === "worker forked", 10_000, mark);
    assert.doesNotMatch(cluster.stderr(), /a bug in an agent's timer|at .*crashing-agent/, "nothing outside the JSON log");
  } finally {
    await cluster.stop("SIGKILL");
  }
});
