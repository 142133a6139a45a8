// In production (the default ENV_MODE) a database or Redis that does not answer is not a refusal:
// bin/agenthost starts, readiness fails, and the primary logs one warning naming the setting and what
// to do. What Redis's client has to say reaches the log as readable lines, never as raw stderr text.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";
import { REDIS_URL } from "../helpers/redis.ts";
import { freePort, request, startCluster, type Cluster, type LogLine } from "./cluster-helper.ts";

const WARN = 40;

/** The primary's warnings about `setting`. */
function primaryWarnings(cluster: Cluster, setting: string): LogLine[] {
  return cluster.logs.filter((l) => l.role === "primary" && l.level === WARN && l.setting === setting);
}

/** No log line holds a stack trace, an unserialised object or the given secret. */
function assertCleanLogs(cluster: Cluster, secret?: string): void {
  const text = cluster.logs.map((l) => JSON.stringify(l)).join("\n");
  assert.doesNotMatch(text, /\[object Object\]/);
  assert.doesNotMatch(text, /\\n\s+at /, "no stack traces");
  if (secret) assert.ok(!text.includes(secret), "the password is never logged");
}

test("an unreachable DATABASE_URL in production: it starts, readiness fails, one warning names DATABASE_URL and what to do", async () => {
  const port = await freePort();
  const cluster = await startCluster({
    WEB_CONCURRENCY: "1",
    MEMORY_BACKEND: "serverdb",
    DATABASE_URL: `postgres://postgres:hunter2@127.0.0.1:${port}/test`,
  });
  try {
    const ready = await request(cluster.url, "GET", "/health/ready");
    assert.equal(ready.status, 503);
    assert.deepEqual(ready.json().checks, ["database_unreachable"]);
    const warnings = primaryWarnings(cluster, "DATABASE_URL");
    assert.equal(warnings.length, 1, JSON.stringify(warnings));
    assert.match(
      String(warnings[0]!.msg),
      new RegExp(
        `^DATABASE_URL postgres://postgres@127\\.0\\.0\\.1:${port}/test: no PostgreSQL answers at 127\\.0\\.0\\.1:${port} \\(connection refused\\): start PostgreSQL there or correct DATABASE_URL\\. ENV_MODE=production: starting anyway, not ready`,
      ),
    );
    assert.equal(cluster.stderr(), "", "not a refusal: nothing on stderr");
    assertCleanLogs(cluster, "hunter2");
  } finally {
    assert.equal(await cluster.stop(), 0);
  }
});

test("an unreachable REDIS_URL in production: it starts, readiness fails, and every Redis log line says what happened", async () => {
  const port = await freePort();
  const cluster = await startCluster({ WEB_CONCURRENCY: "1", REDIS_URL: `redis://:hunter2@127.0.0.1:${port}` });
  try {
    const ready = await request(cluster.url, "GET", "/health/ready");
    assert.equal(ready.status, 503);
    assert.deepEqual(ready.json().checks, ["lock_service_unreachable"]);
    const warnings = primaryWarnings(cluster, "REDIS_URL");
    assert.equal(warnings.length, 1, JSON.stringify(warnings));
    assert.match(String(warnings[0]!.msg), new RegExp(`^REDIS_URL redis://127\\.0\\.0\\.1:${port}: no Redis answers \\(connection refused\\): start Redis there, correct REDIS_URL`));
    assert.match(String(warnings[0]!.msg), /ENV_MODE=production: starting anyway, not ready/);

    // The worker's Redis clients fail to connect, and say so by type, code and the driver's first line.
    const problem = await cluster.waitForLog((l) => typeof l.worker === "number" && l.msg === "redis connection problem");
    const record = await cluster.waitForLog((l) => typeof l.worker === "number" && l.msg === "resumable stream record failed");
    for (const line of [problem, record]) {
      assert.equal(line.err, undefined, JSON.stringify(line));
      assert.equal(line.err_code, "ECONNREFUSED", JSON.stringify(line));
      assert.equal(line.reason, `connect ECONNREFUSED 127.0.0.1:${port}`, JSON.stringify(line));
    }
    assert.equal(cluster.stderr(), "");
    assertCleanLogs(cluster, "hunter2");
  } finally {
    assert.equal(await cluster.stop(), 0);
  }
});

test("a REDIS_URL password Redis does not ask for is one log line naming REDIS_URL, never ioredis's raw stderr lines", async () => {
  const url = new URL(REDIS_URL);
  url.password = "not-needed-secret";
  const cluster = await startCluster({ WEB_CONCURRENCY: "2", LOG_LEVEL: "debug", REDIS_URL: url.href, REDIS_KEY_PREFIX: `first-hour-${randomUUID()}` });
  try {
    const fromWorker = (worker: number) => (l: LogLine) => l.worker === worker && l.setting === "REDIS_URL" && l.source === "ioredis";
    // Each worker's clients met the same server: their copies of the warning are debug lines.
    const workers = [...new Set(cluster.logs.filter((l) => l.msg === "listening").map((l) => l.worker!))];
    for (const worker of workers) assert.equal((await cluster.waitForLog(fromWorker(worker))).level, 20);
    const warnings = primaryWarnings(cluster, "REDIS_URL");
    assert.equal(warnings.length, 1, JSON.stringify(warnings));
    assert.equal(
      warnings[0]!.msg,
      "REDIS_URL carries a password this Redis does not ask for (ioredis sent AUTH and was told none is set): remove the password from REDIS_URL, or set one on the Redis server",
    );
    assert.equal(cluster.stderr(), "", "ioredis's [WARN] lines are routed through the logger");
    const ready = await request(cluster.url, "GET", "/health/ready");
    assert.equal(ready.status, 200, "the password is only unneeded: Redis works");
    assertCleanLogs(cluster, "not-needed-secret");
  } finally {
    assert.equal(await cluster.stop(), 0);
  }
});
