// The commands read .env from the folder they are started in (bin/lib/dot-env.js): each test starts
// the real command as a child process in a folder of its own holding a .env, with an environment built
// from scratch, and checks what took effect, what the environment overrode, and the one stderr line
// that names the file (never a value).
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { freePort, ROOT } from "./cluster-helper.ts";

const dir = mkdtempSync(path.join(os.tmpdir(), "agenthost-dotenv-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A folder of its own holding `.env` with these lines. */
function folderWithDotEnv(name: string, lines: readonly string[]): string {
  const folder = path.join(dir, name);
  mkdirSync(folder);
  writeFileSync(path.join(folder, ".env"), `${lines.join("\n")}\n`);
  return folder;
}

const settingsLine = (folder: string) => `agenthost: settings read from ${path.join(folder, ".env")} (variables set in the environment win)`;

interface Started {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves once stdout holds `text` (rejects if the command exits first). */
  printed(text: string): Promise<void>;
  exited: Promise<number | null>;
  stop(): Promise<number | null>;
}

/** bin/<command> started in `cwd` with only PATH, HOME and `env`. */
function start(command: string, cwd: string, env: Record<string, string> = {}): Started {
  const child = spawn(path.join(ROOT, "bin", command), [], {
    cwd,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? dir, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  const waiters = new Set<() => void>();
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    out += chunk;
    for (const waiter of waiters) waiter();
  });
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (err += chunk));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  void exited.then(() => {
    for (const waiter of waiters) waiter();
  });
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    printed: (text) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (out.includes(text)) {
            waiters.delete(check);
            resolve();
          } else if (child.exitCode !== null || child.signalCode !== null) {
            waiters.delete(check);
            reject(new Error(`bin/${command} exited (${child.exitCode ?? child.signalCode}) before printing ${text}:\n${out}\n${err}`));
          }
        };
        waiters.add(check);
        check();
      }),
    exited,
    stop: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      return exited;
    },
  };
}

test("bin/agenthost: PORT and the other settings of .env take effect; AUTH_SECRET set in the environment wins over the file's", { timeout: 120_000 }, async () => {
  const port = await freePort();
  const folder = folderWithDotEnv("service", [
    "# settings for this folder",
    `PORT=${port}`,
    "METRICS_PORT=0",
    "HOST=127.0.0.1",
    "USE_FAKE_MODEL=true",
    'AUTH_SECRET="token-from-the-file"',
  ]);
  const service = start("agenthost", folder, { AUTH_SECRET: "token-from-the-environment" });
  try {
    await service.printed(`"port":${port},"backend":"memory","msg":"listening"`);
    const info = (token: string) => fetch(`http://127.0.0.1:${port}/info`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal((await info("token-from-the-environment")).status, 200);
    assert.equal((await info("token-from-the-file")).status, 401, "the environment's AUTH_SECRET wins");
    // One line names the file, once for the whole cluster; no value of it is printed anywhere.
    assert.equal(service.stderr(), `${settingsLine(folder)}\n`);
    assert.doesNotMatch(service.stdout() + service.stderr(), /token-from-the-file/);
  } finally {
    assert.equal(await service.stop(), 0, service.stderr());
  }
});

test("bin/agenthost: a bad value in .env is refused like any other, after the line naming the file; AGENTHOST_DOTENV=off reads no file", { timeout: 60_000 }, async () => {
  const folder = folderWithDotEnv("refused", ["PORT=eighty", "AUTH_SECRET=from-the-file"]);
  const refused = start("agenthost", folder, { USE_FAKE_MODEL: "true", METRICS_PORT: "0" });
  assert.equal(await refused.exited, 2);
  assert.equal(refused.stderr(), `${settingsLine(folder)}\nagenthost cannot start: PORT must be an integer\n`);
  assert.equal(refused.stdout(), "");

  // Without the file, production has no credential: the refusal shows the file's AUTH_SECRET was not read.
  const off = start("agenthost", folder, { USE_FAKE_MODEL: "true", METRICS_PORT: "0", AGENTHOST_DOTENV: "off" });
  assert.equal(await off.exited, 2);
  assert.match(off.stderr(), /^agenthost cannot start: ENV_MODE=production requires credentials/);
  assert.doesNotMatch(off.stderr(), /settings read from|PORT/);

  const missing = start("agenthost", folder, { AGENTHOST_DOTENV: "staging.env" });
  assert.equal(await missing.exited, 2);
  assert.equal(missing.stderr(), `agenthost: AGENTHOST_DOTENV names ${path.join(folder, "staging.env")}, which does not exist: create it, or set AGENTHOST_DOTENV=off to read no file\n`);
});

test("bin/maintenance: the variable --serverdb-env names may come from .env", { timeout: 60_000 }, async () => {
  // Nothing listens on port 1: the command gets as far as connecting, which it does only when the variable is set.
  const folder = folderWithDotEnv("maintenance", ["SERVICE_DB=postgres://nobody:hunter2@127.0.0.1:1/nothing"]);
  const args = ["--backend=serverdb", "--serverdb-env=SERVICE_DB", "--before=2020-01-01T00:00:00Z"];
  const run = (env: Record<string, string>) => {
    const child = spawn(path.join(ROOT, "bin/maintenance"), args, { cwd: folder, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let err = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (err += chunk));
    return new Promise<{ code: number | null; stderr: string }>((resolve) => child.on("close", (code) => resolve({ code, stderr: err })));
  };
  const withFile = await run({});
  assert.equal(withFile.code, 1);
  assert.equal(withFile.stderr, `${settingsLine(folder)}\nmaintenance: cannot connect to the server database: connect ECONNREFUSED 127.0.0.1:1\n`);
  const withoutFile = await run({ AGENTHOST_DOTENV: "off" });
  assert.match(withoutFile.stderr, /^maintenance: SERVICE_DB is not set/);
});

test("bin/chat-ui: its settings may come from .env, and the environment's win", { timeout: 60_000 }, async () => {
  const [filePort, envPort] = [await freePort(), await freePort()];
  const folder = folderWithDotEnv("chat", [`CHAT_UI_PORT=${filePort}`, "CHAT_UI_HOST=127.0.0.1", "AGENTHOST_URL=http://127.0.0.1:1"]);
  const fromFile = start("chat-ui", folder);
  try {
    await fromFile.printed(`http://127.0.0.1:${filePort}`);
    assert.equal((await fetch(`http://127.0.0.1:${filePort}/`)).status, 200);
    assert.equal(fromFile.stderr(), `${settingsLine(folder)}\n`);
  } finally {
    await fromFile.stop();
  }
  const fromEnvironment = start("chat-ui", folder, { CHAT_UI_PORT: String(envPort) });
  try {
    await fromEnvironment.printed(`http://127.0.0.1:${envPort}`);
    assert.equal((await fetch(`http://127.0.0.1:${envPort}/`)).status, 200);
  } finally {
    await fromEnvironment.stop();
  }
});
