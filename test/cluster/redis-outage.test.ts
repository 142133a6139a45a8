// A private redis-server on a port of its own (never the shared one), stopped in the middle of a
// run and started again: readiness fails, lock-needing requests answer 503, and both recover.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { Redis } from "ioredis";
import { eventually, freePort, invoke, request, startCluster, type Cluster } from "./cluster-helper.ts";

async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], {
    stdio: "ignore",
  });
  const probe = new Redis({ port, host: "127.0.0.1", lazyConnect: true, retryStrategy: () => null });
  probe.on("error", () => {});
  await eventually(async () => {
    await probe.connect().catch(() => {});
    return (await probe.ping()) === "PONG";
  }, 10_000, "private redis-server answers");
  probe.disconnect();
  return child;
}

async function stopRedis(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}

/** The same answer from `times` consecutive requests on new connections (so from every worker). */
async function everyWorker(times: number, check: () => Promise<boolean>): Promise<boolean> {
  for (let i = 0; i < times; i++) if (!(await check())) return false;
  return true;
}

describe("Redis outage", () => {
  let redisPort: number;
  let redis: ChildProcess | undefined;
  let cluster: Cluster;

  before(async () => {
    redisPort = await freePort();
    redis = await startRedis(redisPort);
    cluster = await startCluster({ REDIS_URL: `redis://127.0.0.1:${redisPort}`, REDIS_LOCK_LEASE: "2" });
  });
  after(async () => {
    await cluster?.stop("SIGKILL");
    if (redis && redis.exitCode === null) await stopRedis(redis);
  });

  const ready = async () => (await request(cluster.url, "GET", "/health/ready")).status === 200;
  const notReady = async () => {
    const res = await request(cluster.url, "GET", "/health/ready");
    return res.status === 503 && res.json<{ checks: string[] }>().checks.includes("lock_service_unreachable");
  };

  test("readiness fails, runs and lock-needing requests get 503, and all recover when Redis returns", async () => {
    // A worker may report listening before its Redis connection is up: readiness says when it is.
    await eventually(() => everyWorker(4, ready), 10_000, "ready with Redis up", 100);
    const thread = randomUUID();
    const running = invoke(cluster.url, "slow-agent", thread, "sleep 5000");
    // The run holds its conversation's lock in this Redis (the only one here) before it is stopped.
    const probe = new Redis({ port: redisPort, host: "127.0.0.1" });
    try {
      await eventually(async () => (await probe.keys("*lock:*")).length === 1, 10_000, "the run's lock in Redis", 10);
    } finally {
      probe.disconnect();
    }

    await stopRedis(redis!);
    // The run's lease cannot be extended: the run is stopped and answered 503 before its 5 s are up.
    const started = performance.now();
    const stopped = await running;
    assert.equal(stopped.status, 503, stopped.body);
    assert.equal(stopped.json().error_code, "lock_unavailable");
    assert.ok(performance.now() - started < 3_000);

    await eventually(() => everyWorker(4, notReady), 10_000, "every worker reports Redis unreachable");
    const refused = await invoke(cluster.url, "chatbot-agent", randomUUID(), "hello");
    assert.equal(refused.status, 503);
    assert.equal(refused.json().error_code, "lock_unavailable");
    assert.equal((await request(cluster.url, "GET", "/health/live")).status, 200, "liveness is unaffected");

    redis = await startRedis(redisPort);
    await eventually(() => everyWorker(4, ready), 15_000, "every worker ready again", 250);
    const served = await invoke(cluster.url, "chatbot-agent", randomUUID(), "hello");
    assert.equal(served.status, 200, served.body);
    // The interrupted conversation is usable again (its lease was never extended past 2 s).
    const again = await invoke(cluster.url, "slow-agent", thread, "sleep 10");
    assert.equal(again.status, 200, again.body);
  });
});
