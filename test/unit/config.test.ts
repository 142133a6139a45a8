import { test } from "node:test";
import assert from "node:assert/strict";
import { availableCpus } from "../../src/config/available-cpus.ts";
import { ConfigError, loadConfig } from "../../src/config/load.ts";

const base = { AUTH_SECRET: "s3cret", USE_FAKE_MODEL: "true" };

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return [...error.problems];
  }
  assert.fail("configuration was accepted");
}

test("defaults match the spec and the issue", () => {
  const c = loadConfig(base);
  assert.equal(c.PORT, 8080);
  assert.equal(c.ENV_MODE, "production");
  assert.equal(c.AUTH_MODE, "trusted");
  assert.equal(c.AUTH_SERVICE_USER_ID, "service");
  assert.equal(c.REQUEST_MAX_CONCURRENT, 8);
  assert.equal(c.REQUEST_TIMEOUT, 300);
  assert.equal(c.SHUTDOWN_GRACE, 300, "SHUTDOWN_GRACE defaults to REQUEST_TIMEOUT");
  assert.equal(c.REQUEST_MAX_BYTES, 20 * 1024 * 1024);
  assert.equal(c.THREAD_QUEUE_TIMEOUT, 5);
  assert.equal(c.THREAD_QUEUE_MAX_WAITERS, 32);
  assert.equal(c.REQUEST_QUEUE_MAX_WAITERS, 0);
  assert.equal(c.REQUEST_QUEUE_TIMEOUT, 1);
  assert.equal(c.CHECKPOINT_DURABILITY, "sync");
  assert.equal(c.CHECK_INTERRUPTS, true);
  assert.equal(c.MEMORY_BACKEND, "memory");
  assert.equal(c.SERVERDB_SCHEMA, "public");
  assert.equal(c.LLM_HTTP_MAX_CONNECTIONS, 1000);
  assert.equal(c.LLM_HTTP_MAX_KEEPALIVE_CONNECTIONS, 100);
  assert.equal(c.LLM_HTTP_KEEPALIVE_EXPIRY, 5);
  assert.equal(c.LLM_HTTP_CONNECT_TIMEOUT, 5);
  assert.equal(c.LLM_HTTP_READ_TIMEOUT, 600);
  assert.equal(c.LLM_HTTP_WRITE_TIMEOUT, 600);
  assert.equal(c.LLM_HTTP_POOL_TIMEOUT, 600);
  assert.equal(c.LLM_HTTP_MAX_RETRIES, 2);
  assert.equal(c.LLM_HTTP_MAX_POOLS, 32);
  assert.equal(c.LLM_HTTP_SHUTDOWN_TIMEOUT, 10);
  assert.deepEqual(c.AGENT_PATHS, []);
  assert.deepEqual(c.MODEL_CONFIGS, {});
  assert.ok(Object.isFrozen(c));
});

test("WEB_CONCURRENCY: one worker with the memory backend, the CPUs available with a shared one", () => {
  assert.equal(loadConfig(base).WEB_CONCURRENCY, 1);
  assert.equal(loadConfig({ ...base, MEMORY_BACKEND: "memory", WEB_CONCURRENCY: "1" }).WEB_CONCURRENCY, 1);
  assert.equal(loadConfig({ ...base, MEMORY_BACKEND: "filedb" }).WEB_CONCURRENCY, availableCpus());
  assert.equal(loadConfig({ ...base, MEMORY_BACKEND: "filedb", WEB_CONCURRENCY: "3" }).WEB_CONCURRENCY, 3);
  for (const env of [{ WEB_CONCURRENCY: "2" }, { MEMORY_BACKEND: "memory", WEB_CONCURRENCY: "4" }]) {
    assert.throws(
      () => loadConfig({ ...base, ...env }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.problems.length === 1 &&
        /^WEB_CONCURRENCY=\d with MEMORY_BACKEND=memory would split each conversation .* set MEMORY_BACKEND=filedb .* or WEB_CONCURRENCY=1$/.test(error.problems[0]!),
    );
  }
});

test("booleans accept true/false/1/0 and nothing else", () => {
  for (const [raw, value] of [["true", true], ["1", true], ["false", false], ["0", false], ["TRUE", true]] as const) {
    assert.equal(loadConfig({ ...base, USE_FAKE_MODEL: raw }).USE_FAKE_MODEL, value, raw);
  }
  for (const raw of ["yes", "on", "2"]) {
    assert.match(problems({ ...base, USE_FAKE_MODEL: raw }).join("\n"), /USE_FAKE_MODEL must be true, false, 1 or 0/);
  }
});

test("every startup refusal is named", () => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ ...base, AUTH_MODE: "open" }, /AUTH_MODE must be trusted or token/],
    [{ USE_FAKE_MODEL: "true" }, /ENV_MODE=production requires credentials/],
    [{ ENV_MODE: "development", AUTH_MODE: "token" }, /AUTH_MODE=token requires AUTH_USERS, AUTH_SECRET or AUTH_JWT_ISSUER/],
    [{ ...base, FEEDBACK_SIGNING_SECRET: "short" }, /FEEDBACK_SIGNING_SECRET must be at least 32 characters/],
    [{ AUTH_SECRET: "x".repeat(40), FEEDBACK_SIGNING_SECRET: "x".repeat(40) }, /FEEDBACK_SIGNING_SECRET must differ from AUTH_SECRET/],
    [{ AUTH_SECRET: "w".repeat(40), WEBHOOK_SIGNING_SECRET: "w".repeat(40) }, /WEBHOOK_SIGNING_SECRET must differ from AUTH_SECRET/],
    [{ AUTH_SECRET: "a".repeat(40), FEEDBACK_SIGNING_SECRET: "v".repeat(40), WEBHOOK_SIGNING_SECRET: "v".repeat(40) }, /WEBHOOK_SIGNING_SECRET must differ from FEEDBACK_SIGNING_SECRET/],
    [{ AUTH_USERS: JSON.stringify({ ann: "y".repeat(40) }), FEEDBACK_SIGNING_SECRET: "y".repeat(40) }, /must differ from every AUTH_USERS token/],
    [{ ...base, LLM_HTTP_MAX_CONNECTIONS: "10", LLM_HTTP_MAX_KEEPALIVE_CONNECTIONS: "11" }, /LLM_HTTP_MAX_KEEPALIVE_CONNECTIONS \(11\) must not exceed LLM_HTTP_MAX_CONNECTIONS \(10\)/],
    [{ ...base, AGENT_PATHS: "[oops" }, /AGENT_PATHS is not valid JSON/],
    [{ ...base, AUTH_USERS: "{nope}" }, /AUTH_USERS is not valid JSON/],
    [{ ...base, MODEL_CONFIGS: "{" }, /MODEL_CONFIGS is not valid JSON/],
    [{ ...base, MCP_SERVERS: "[" }, /MCP_SERVERS is not valid JSON/],
    [{ ...base, MCP_AGENT_SERVERS: "{\"a\":" }, /MCP_AGENT_SERVERS is not valid JSON/],
    [{ ...base, AGENT_PATHS: "{}" }, /AGENT_PATHS/],
    [{ ...base, LLM_HTTP_ASYNC_TRANSPORT: "aiohttp" }, /LLM_HTTP_ASYNC_TRANSPORT has no meaning in agenthost/],
    [{ ...base, MEMORY_BACKEND: "serverdb" }, /MEMORY_BACKEND=serverdb requires DATABASE_URL/],
    [{ ...base, AUTH_USERS: JSON.stringify({ a: "same", b: "same" }) }, /same token to two users/],
    [{ ...base, PORT: "http" }, /PORT must be an integer/],
    [{ ...base, OBSERVABILITY_BACKEND: "langfuse", LANGFUSE_PUBLIC_KEY: "pk" }, /OBSERVABILITY_BACKEND=langfuse requires LANGFUSE_SECRET_KEY/],
    [{ ...base, OBSERVABILITY_BACKEND: "langsmith" }, /OBSERVABILITY_BACKEND=langsmith requires LANGSMITH_API_KEY/],
  ];
  for (const [env, expected] of cases) assert.match(problems(env).join("\n"), expected, JSON.stringify(env));
});

test("an AUTH_USERS user named like AUTH_SERVICE_USER_ID is refused while AUTH_SECRET is set, in one line naming both", () => {
  const cases: Array<[Record<string, string>, string, string]> = [
    [{ ...base, AUTH_USERS: JSON.stringify({ service: "svc-token" }) }, "service", "AUTH_SECRET requests that name no user_id"],
    [{ ...base, AUTH_MODE: "token", AUTH_USERS: JSON.stringify({ service: "svc-token" }) }, "service", "every AUTH_SECRET request"],
    [{ ...base, AUTH_SERVICE_USER_ID: "ops", AUTH_USERS: JSON.stringify({ ann: "ann-token", ops: "ops-token" }) }, "ops", "that name no user_id"],
  ];
  for (const [env, user, actsAs] of cases) {
    const found = problems(env);
    assert.equal(found.length, 1, found.join("\n"));
    const message = new ConfigError(found).message;
    assert.doesNotMatch(message, /\n/);
    assert.match(message, /^agenthost cannot start: AUTH_USERS has a user "[^"]+", which is AUTH_SERVICE_USER_ID/);
    assert.ok(message.includes(`"${user}"`) && message.includes(actsAs), message);
    // The tokens are not in it.
    assert.ok(!message.includes("svc-token") && !message.includes("ops-token"), message);
  }
  // Renaming either side, or no shared secret to collide with, starts.
  assert.equal(loadConfig({ ...base, AUTH_SERVICE_USER_ID: "app", AUTH_USERS: JSON.stringify({ service: "svc-token" }) }).AUTH_SERVICE_USER_ID, "app");
  assert.ok(loadConfig({ ...base, AUTH_USERS: JSON.stringify({ Service: "svc-token" }) }));
  assert.ok(loadConfig({ USE_FAKE_MODEL: "true", AUTH_USERS: JSON.stringify({ service: "svc-token" }) }));
});

test("one refusal lists every problem at once", () => {
  const found = problems({
    AUTH_MODE: "bogus",
    AGENT_PATHS: "not json",
    FEEDBACK_SIGNING_SECRET: "short",
    LLM_HTTP_MAX_CONNECTIONS: "1",
    LLM_HTTP_MAX_KEEPALIVE_CONNECTIONS: "2",
  });
  assert.ok(found.length >= 4, found.join("\n"));
  const message = new ConfigError(found).message;
  for (const name of ["AUTH_MODE", "AGENT_PATHS", "FEEDBACK_SIGNING_SECRET", "LLM_HTTP_MAX_KEEPALIVE_CONNECTIONS", "ENV_MODE=production"]) {
    assert.ok(message.includes(name), `${name} missing from:\n${message}`);
  }
});

test("development mode may run without credentials; empty strings count as unset", () => {
  const c = loadConfig({ ENV_MODE: "development", AUTH_SECRET: "", PORT: "" });
  assert.equal(c.AUTH_SECRET, undefined);
  assert.equal(c.PORT, 8080);
});
