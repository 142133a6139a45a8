// What a newcomer meets when something around the service is wrong: bin/agenthost refuses with one
// line on stderr naming the setting to change, exit code 2, and (for what the primary checks) before
// any worker is forked.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { DATABASE_URL } from "../helpers/postgres.ts";
import { REDIS_URL } from "../helpers/redis.ts";
import { freePort, ROOT, TOKEN } from "./cluster-helper.ts";

interface Outcome {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function runPrimary(env: Record<string, string>, cwd = ROOT): Promise<Outcome> {
  return new Promise((resolve) => {
    const child = spawn(path.join(ROOT, "bin/agenthost"), [], {
      cwd,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", AGENTHOST_DOTENV: "off", USE_FAKE_MODEL: "true", AUTH_SECRET: TOKEN, HOST: "127.0.0.1", PORT: "0", METRICS_PORT: "0", ...env },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c));
    child.stderr.on("data", (c: Buffer) => (stderr += c));
    child.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

/** Refused by the primary itself: exit 2, one line on stderr, no worker forked, no stack. */
function assertPrimaryRefusal(outcome: Outcome, line: RegExp): void {
  assert.equal(outcome.code, 2, outcome.stderr);
  const lines = outcome.stderr.trimEnd().split("\n");
  assert.equal(lines.length, 1, `one line:\n${outcome.stderr}`);
  assert.match(lines[0]!, /^agenthost cannot start: /);
  assert.match(lines[0]!, line);
  assert.doesNotMatch(outcome.stdout, /worker forked/);
  assert.doesNotMatch(outcome.stderr + outcome.stdout, /\n\s+at /);
}

/** A loopback port nobody listens on (taken, then released). */
async function deadPort(): Promise<number> {
  return freePort();
}

const scratch = mkdtempSync(path.join(os.tmpdir(), "agenthost-refusals-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

test("a busy PORT is refused by the primary before any worker starts", async () => {
  const holder = net.createServer();
  await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
  const { port } = holder.address() as net.AddressInfo;
  try {
    const outcome = await runPrimary({ PORT: String(port) });
    assertPrimaryRefusal(outcome, new RegExp(`PORT ${port} is already in use on 127\\.0\\.0\\.1: stop the process holding it, or set PORT to a free port`));
  } finally {
    holder.close();
  }
});

test("a busy METRICS_PORT is refused by the primary, saying what to set", async () => {
  const holder = net.createServer();
  await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
  const { port } = holder.address() as net.AddressInfo;
  try {
    const outcome = await runPrimary({ METRICS_PORT: String(port) });
    assertPrimaryRefusal(
      outcome,
      new RegExp(`^agenthost cannot start: METRICS_PORT ${port} is already in use on 127\\.0\\.0\\.1: stop the process holding it, or set METRICS_PORT to a free port \\(0 lets the system pick one\\)$`),
    );
    assert.doesNotMatch(outcome.stderr, /EADDRINUSE|listen /);
  } finally {
    holder.close();
  }
});

test("a worker started alone (node workers/http.ts) refuses a busy PORT the same way", async () => {
  const holder = net.createServer();
  await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
  const { port } = holder.address() as net.AddressInfo;
  try {
    const outcome = await new Promise<Outcome>((resolve) => {
      const child = spawn(process.execPath, ["--import", "tsx", "workers/http.ts"], {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", USE_FAKE_MODEL: "true", AUTH_SECRET: TOKEN, HOST: "127.0.0.1", PORT: String(port) },
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (c: Buffer) => (stdout += c));
      child.stderr.on("data", (c: Buffer) => (stderr += c));
      child.on("exit", (code) => resolve({ code, stdout, stderr }));
    });
    assert.equal(outcome.code, 2, outcome.stderr);
    assert.equal(outcome.stderr, `agenthost cannot start: PORT ${port} is already in use on 127.0.0.1: stop the process holding it, or set PORT to a free port\n`);
  } finally {
    holder.close();
  }
});

test("a database that does not exist is refused, naming DATABASE_URL and how to create it", async () => {
  const url = new URL(DATABASE_URL);
  url.pathname = "/agenthost_no_such_database";
  url.password = "hunter2";
  const outcome = await runPrimary({ MEMORY_BACKEND: "serverdb", DATABASE_URL: url.href });
  assertPrimaryRefusal(outcome, /DATABASE_URL .*: database "agenthost_no_such_database" does not exist on .*: create it \(createdb .*\) or name an existing one in DATABASE_URL/);
  assert.doesNotMatch(outcome.stderr, /hunter2/, "the password is not printed");
});

test("an unreachable database is refused in development, naming DATABASE_URL", async () => {
  const port = await deadPort();
  const outcome = await runPrimary({ ENV_MODE: "development", MEMORY_BACKEND: "serverdb", DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/test` });
  assertPrimaryRefusal(outcome, new RegExp(`DATABASE_URL postgres://postgres@127\\.0\\.0\\.1:${port}/test: no PostgreSQL answers at 127\\.0\\.0\\.1:${port} \\(connection refused\\): start PostgreSQL there or correct DATABASE_URL`));
});

test("an unreachable Redis is refused in development, naming REDIS_URL", async () => {
  const port = await deadPort();
  const outcome = await runPrimary({ ENV_MODE: "development", REDIS_URL: `redis://127.0.0.1:${port}` });
  assertPrimaryRefusal(outcome, new RegExp(`REDIS_URL redis://127\\.0\\.0\\.1:${port}: no Redis answers \\(connection refused\\): start Redis there, correct REDIS_URL, or unset REDIS_URL on a single host`));
});

test("a reachable Redis and database pass the checks (the refusals are not blanket)", async () => {
  const { checkDatabase, checkRedis } = await import("../../src/cluster/dependency-checks.ts");
  const { loadConfig } = await import("../../src/config/load.ts");
  const config = loadConfig({ ENV_MODE: "development", MEMORY_BACKEND: "serverdb", DATABASE_URL, REDIS_URL, USE_FAKE_MODEL: "true" });
  assert.equal(await checkDatabase(config), undefined);
  assert.equal(await checkRedis(config), undefined);
});

test("in production an unreachable database is a warning: the workers start not ready and wait", async () => {
  const { checkDatabase } = await import("../../src/cluster/dependency-checks.ts");
  const { loadConfig } = await import("../../src/config/load.ts");
  const port = await deadPort();
  const config = loadConfig({ AUTH_SECRET: TOKEN, MEMORY_BACKEND: "serverdb", DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/test`, USE_FAKE_MODEL: "true" });
  const problem = await checkDatabase(config);
  assert.equal(problem?.setting, "DATABASE_URL");
  assert.match(problem.message, /no PostgreSQL answers/);
});

test("the memory backend with WEB_CONCURRENCY above 1 is refused, saying what to set", async () => {
  const outcome = await runPrimary({ WEB_CONCURRENCY: "2" });
  assert.equal(outcome.code, 2);
  assert.match(
    outcome.stderr,
    /WEB_CONCURRENCY=2 with MEMORY_BACKEND=memory would split each conversation between workers .*: set MEMORY_BACKEND=filedb \(SQLite\) or serverdb \(PostgreSQL\) for several workers, or WEB_CONCURRENCY=1/,
  );
  assert.doesNotMatch(outcome.stdout, /worker forked/);
});

test("an AUTH_USERS user named like AUTH_SERVICE_USER_ID is refused in one line naming both", async () => {
  const outcome = await runPrimary({ AUTH_USERS: JSON.stringify({ ann: "ann-token", service: "service-token" }) });
  assertPrimaryRefusal(outcome, /AUTH_USERS has a user "service", which is AUTH_SERVICE_USER_ID, .*set AUTH_SERVICE_USER_ID to another id$/);
  assert.doesNotMatch(outcome.stderr, /service-token/);
});

test("an AGENT_PATHS file written without ./ is refused, saying to add it", async () => {
  writeFileSync(path.join(scratch, "my-agents.ts"), "export const echo = 1;\n");
  const outcome = await runPrimary({ WEB_CONCURRENCY: "1", AGENT_PATHS: JSON.stringify(["my-agents.ts:echo"]) }, scratch);
  assert.equal(outcome.code, 2);
  assert.match(outcome.stderr, /AGENT_PATHS entry "my-agents\.ts:echo" does not resolve: "my-agents\.ts" is read as a package name; my-agents\.ts is a file here, so write "\.\/my-agents\.ts"/);
  assert.doesNotMatch(outcome.stderr, /\n\s+at /);
});

test("an AGENT_PATHS entry naming no file says where it looked; one without an export name shows the format", async () => {
  const missing = await runPrimary({ WEB_CONCURRENCY: "1", AGENT_PATHS: JSON.stringify(["./nowhere.ts:echo"]) }, scratch);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /"\.\/nowhere\.ts:echo" does not resolve: there is no file .*nowhere\.ts \(paths resolve from /);
  const noExport = await runPrimary({ WEB_CONCURRENCY: "1", AGENT_PATHS: JSON.stringify(["./my-agents.ts"]) }, scratch);
  assert.equal(noExport.code, 2);
  assert.match(noExport.stderr, /^agenthost cannot start: AGENT_PATHS entry "\.\/my-agents\.ts" names no export: entries look like "<module or file>:<export name>", .*e\.g\. "\.\/my-agents\.ts:echo"\n$/);
  assert.match(missing.stderr, /^agenthost cannot start: AGENT_PATHS entry [^\n]*\n$/, "one line");
});

test("with WEB_CONCURRENCY=2 a bad AGENT_PATHS entry is printed once, as one line, exit 2", async () => {
  writeFileSync(path.join(scratch, "my-agents.ts"), "export const echo = 1;\n");
  const outcome = await runPrimary(
    { WEB_CONCURRENCY: "2", MEMORY_BACKEND: "filedb", FILEDB_DB_PATH: path.join(scratch, "twice.sqlite"), AGENT_PATHS: JSON.stringify(["my-agents.ts:echo"]) },
    scratch,
  );
  assert.equal(outcome.code, 2, outcome.stderr);
  assert.equal(
    outcome.stderr,
    `agenthost cannot start: AGENT_PATHS entry "my-agents.ts:echo" does not resolve: "my-agents.ts" is read as a package name; my-agents.ts is a file here, so write "./my-agents.ts"\n`,
  );
  assert.equal(outcome.stdout.split("\n").filter((l) => l.includes('"worker forked"')).length, 2, "both workers started, and met the same problem");
});

test("AGENT_PATHS that is not JSON is refused in one line showing the format, with the value written as it should be", async () => {
  const outcome = await runPrimary({ AGENT_PATHS: "./examples/my-agents.ts:echo" });
  assertPrimaryRefusal(
    outcome,
    /^agenthost cannot start: AGENT_PATHS is not valid JSON: write a JSON list of "<module or file>:<export>" strings, e\.g\. AGENT_PATHS='\["\.\/examples\/my-agents\.ts:echo"\]'$/,
  );
  const unclosed = await runPrimary({ AGENT_PATHS: '["./examples/my-agents.ts:echo"' });
  assertPrimaryRefusal(unclosed, /AGENT_PATHS is not valid JSON: write a JSON list of "<module or file>:<export>" strings, e\.g\. AGENT_PATHS='\["\.\/examples\/my-agents\.ts:echo"\]'$/);
});

test("several configuration problems are still listed all at once, one indented line each", async () => {
  const outcome = await runPrimary({ AGENT_PATHS: "nope", PORT: "not-a-port" });
  assert.equal(outcome.code, 2);
  const lines = outcome.stderr.trimEnd().split("\n");
  assert.equal(lines[0], "agenthost cannot start; fix the configuration:");
  assert.equal(lines.length, 3, outcome.stderr);
  assert.ok(lines.slice(1).every((line) => line.startsWith("  - ")), outcome.stderr);
});
