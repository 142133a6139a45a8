// In production (the default ENV_MODE) a database or Redis that does not answer is not a refusal:
// bin/agenthost starts, readiness fails, and the primary logs one warning naming the setting and what
// to do. What Redis's client reports as errors reaches the log as readable lines; its AUTH warnings are
// its own console.warn lines, and the primary's check names REDIS_URL in one log line.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";
import { REDIS_URL } from "../helpers/redis.ts";
import { eventually, freePort, request, startCluster, type Cluster, type LogLine } from "./cluster-helper.ts";

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

test("a REDIS_URL password Redis does not ask for is one log line naming REDIS_URL; ioredis's own warnings stay its own", async () => {
  const url = new URL(REDIS_URL);
  url.password = "not-needed-secret";
  const cluster = await startCluster({ WEB_CONCURRENCY: "2", REDIS_URL: url.href, REDIS_KEY_PREFIX: `first-hour-${randomUUID()}` });
  try {
    // The primary's check sends the AUTH itself and reads Redis's answer.
    const warnings = primaryWarnings(cluster, "REDIS_URL");
    assert.equal(warnings.length, 1, JSON.stringify(warnings));
    const shown = `redis://${url.host}${url.pathname}`;
    assert.equal(
      warnings[0]!.msg,
      `REDIS_URL ${shown} carries a password this Redis does not ask for (it answered AUTH that none is set): remove the password from REDIS_URL, or set one on the Redis server`,
    );
    // A check can time out on a loaded machine (a 503 then); Redis working shows as readiness within a bound.
    await eventually(async () => (await request(cluster.url, "GET", "/health/ready")).status === 200, 15_000, "ready: the password is only unneeded, Redis works");
    // console.warn is the process's own: the workers' clients print ioredis's warning as ioredis writes it, and nothing else.
    await eventually(() => cluster.stderr().includes("does not require a password"), 10_000, "ioredis's own warning on stderr");
    for (const line of cluster.stderr().split("\n").filter(Boolean)) assert.match(line, /^\[WARN\] .*does not require a password, but a password was supplied/);
    assertCleanLogs(cluster, "not-needed-secret");
    assert.ok(!cluster.stderr().includes("not-needed-secret"));
  } finally {
    assert.equal(await cluster.stop(), 0);
  }
});
