// `npm run dev` (scripts/dev.mjs) as a developer runs it: one worker on 127.0.0.1, no token needed,
// the fake model unless a provider is configured, readable log lines, and a restart when an AGENT_PATHS
// file or a file under src/ changes. The restart test runs a copy of the checkout's runnable parts, so
// editing its src/ touches nobody else's.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { after, test } from "node:test";
import { FAKE_PROVIDER_ANSWER, FAKE_PROVIDER_KEY, startFakeProvider } from "../fixtures/providers/fake-provider.ts";
import { eventually, freePort, ROOT } from "./cluster-helper.ts";

// Inside the checkout, so the agent file resolves @langchain/* from its node_modules.
mkdirSync(path.join(ROOT, "test/artifacts"), { recursive: true });
const dir = mkdtempSync(path.join(ROOT, "test/artifacts", "dev-loop-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A copy of what `npm run dev` runs (no dist/: it runs the sources through tsx), sharing node_modules. */
function copyOfCheckout(name = "checkout"): string {
  const copy = path.join(dir, name);
  for (const part of ["src", "workers", "bin", "scripts", "package.json", "tsconfig.json"]) {
    cpSync(path.join(ROOT, part), path.join(copy, part), { recursive: true });
  }
  symlinkSync(path.join(ROOT, "node_modules"), path.join(copy, "node_modules"), "dir");
  return copy;
}
const agentSource = (answer: string) => `import { AIMessage } from "@langchain/core/messages";
import { MessagesAnnotation, StateGraph } from "@langchain/langgraph";
export const echo = new StateGraph(MessagesAnnotation)
  .addNode("echo", () => ({ messages: [new AIMessage(${JSON.stringify(answer)})] }))
  .addEdge("__start__", "echo")
  .compile({ name: "echo" });
`;

async function invoke(url: string, agent: string): Promise<{ status: number; content?: unknown }> {
  try {
    const response = await fetch(`${url}/${agent}/invoke`, { method: "POST", body: JSON.stringify({ input: { message: "hi" } }) });
    const body = (await response.json()) as { content?: unknown };
    return { status: response.status, content: body.content };
  } catch {
    return { status: 0 }; // restarting
  }
}

interface DevProcess {
  readonly url: string;
  output(): string;
  stop(): Promise<number | null>;
}

/** `node scripts/dev.mjs` of `checkout`, on ports of its own, with `env` (the environment is built from scratch). */
async function startDev(checkout: string, env: Record<string, string>): Promise<DevProcess> {
  const [port, metricsPort] = [await freePort(), await freePort()];
  const child = spawn(process.execPath, [path.join(checkout, "scripts/dev.mjs")], {
    cwd: checkout,
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: process.env.HOME ?? dir,
      // The second test runs the checkout itself: a developer's .env there must not change it.
      AGENTHOST_DOTENV: "off",
      PORT: String(port),
      METRICS_PORT: String(metricsPort),
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (c: string) => (out += c));
  child.stderr.setEncoding("utf8").on("data", (c: string) => (out += c));
  const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
  return {
    url: `http://127.0.0.1:${port}`,
    output: () => out,
    stop: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      return exited;
    },
  };
}

async function rootPointer(url: string): Promise<unknown> {
  try {
    return ((await (await fetch(`${url}/`)).json()) as { service?: unknown }).service;
  } catch {
    return undefined; // restarting
  }
}

test("npm run dev: one worker on 127.0.0.1, the fake model without a token, readable logs, a restart on an agent or src/ change", { timeout: 180_000 }, async () => {
  const checkout = copyOfCheckout();
  const agentFile = path.join(dir, "agents.ts");
  writeFileSync(agentFile, agentSource("first version"));
  const dev = await startDev(checkout, { FILEDB_DB_PATH: path.join(dir, "dev.sqlite"), AGENT_PATHS: JSON.stringify([`${agentFile}:echo`]) });
  const { url } = dev;
  const port = new URL(url).port;
  try {
    await eventually(async () => (await invoke(url, "echo")).content === "first version", 60_000, "the dev service answers");
    const fake = await invoke(url, "chatbot-agent");
    assert.equal(fake.status, 200, "no token needed in development");
    assert.match(String(fake.content), /fake model/);
    assert.match(dev.output(), /^agenthost dev: .*\(fake model, filedb\)/m);
    assert.match(dev.output(), new RegExp(`^\\d\\d:\\d\\d:\\d\\d\\.\\d{3} INFO  worker 1  listening  host=127\\.0\\.0\\.1 port=${port} backend=filedb$`, "m"));
    assert.equal(dev.output().match(/worker forked/g)?.length, 1, "one worker");
    assert.doesNotMatch(dev.output(), /^\{"level"/m, "no raw JSON lines");

    writeFileSync(agentFile, agentSource("second version"));
    await eventually(async () => (await invoke(url, "echo")).content === "second version", 60_000, "restarted with the agent change");
    assert.match(dev.output(), /Restarting/);

    // An edit under src/ (here, what GET / answers) restarts it with the new code.
    assert.equal(await rootPointer(url), "agenthost");
    const routes = path.join(checkout, "src/http/routes/docs.ts");
    const source = readFileSync(routes, "utf8");
    assert.ok(source.includes('service: "agenthost",'), "the line this test edits is still there");
    writeFileSync(routes, source.replace('service: "agenthost",', 'service: "agenthost (edited)",'));
    await eventually(async () => (await rootPointer(url)) === "agenthost (edited)", 60_000, "restarted with the src/ change");
    assert.equal(dev.output().match(/Restarting/g)?.length, 2, "one restart per change");
  } finally {
    assert.equal(await dev.stop(), 0, dev.output());
  }
});

test("npm run dev with a provider key: the configured model answers, not the fake one", { timeout: 120_000 }, async () => {
  const provider = await startFakeProvider();
  const dev = await startDev(ROOT, {
    FILEDB_DB_PATH: path.join(dir, "provider.sqlite"),
    OPENAI_API_KEY: FAKE_PROVIDER_KEY,
    OPENAI_BASE_URL: `${provider.url}/v1`,
    DEFAULT_MODEL: "behave-ok",
  });
  try {
    await eventually(async () => (await invoke(dev.url, "chatbot-agent")).status !== 0, 60_000, "the dev service answers");
    const answer = await invoke(dev.url, "chatbot-agent");
    assert.equal(answer.status, 200, dev.output());
    assert.equal(answer.content, FAKE_PROVIDER_ANSWER);
    assert.ok(provider.requests.some((r) => r.path === "/v1/chat/completions"), "the provider was called");
    assert.match(dev.output(), /^agenthost dev: .*\(configured models, filedb\)/m);
  } finally {
    assert.equal(await dev.stop(), 0, dev.output());
    await provider.close();
  }
});

/**
 * A checkout of its own for the refusal tests: nothing another test (or anyone) changes under the
 * watched src/ while they run restarts their service.
 */
let refusalsCheckout: string | undefined;

/** `node scripts/dev.mjs` started in `cwd` with only PATH, HOME and `env`: its exit code and everything it printed. */
function runDevUntilExit(cwd: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  refusalsCheckout ??= copyOfCheckout("checkout-refusals");
  const child = spawn(process.execPath, [path.join(refusalsCheckout, "scripts/dev.mjs")], {
    cwd,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? dir, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
  child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}

/** A TCP port this test holds on 127.0.0.1 until `release`. */
async function heldPort(): Promise<{ port: number; release(): Promise<void> }> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as net.AddressInfo).port, release: () => new Promise((resolve) => server.close(() => resolve())) };
}

test("npm run dev on a busy port: only the service's one-line refusal, exit 2 (no banner, no waiting for changes)", { timeout: 120_000 }, async () => {
  const held = await heldPort();
  const cwd = mkdtempSync(path.join(dir, "busy-"));
  try {
    const run = await runDevUntilExit(cwd, { PORT: String(held.port), METRICS_PORT: "0" });
    assert.equal(run.code, 2, run.stdout + run.stderr);
    assert.equal(run.stdout, "");
    assert.equal(run.stderr, `agenthost cannot start: PORT ${held.port} is already in use on 127.0.0.1: stop the process holding it, or set PORT to a free port\n`);

    // The same PORT from a .env in the folder it starts in: the line naming the file, then the refusal.
    writeFileSync(path.join(cwd, ".env"), `PORT=${held.port}\nMETRICS_PORT=0\n`);
    const fromFile = await runDevUntilExit(cwd, {});
    assert.equal(fromFile.code, 2, fromFile.stdout + fromFile.stderr);
    assert.equal(fromFile.stdout, "");
    assert.equal(
      fromFile.stderr,
      `agenthost: settings read from ${path.join(cwd, ".env")} (variables set in the environment win)\n` +
        `agenthost cannot start: PORT ${held.port} is already in use on 127.0.0.1: stop the process holding it, or set PORT to a free port\n`,
    );
  } finally {
    await held.release();
  }
});

test("npm run dev with an invalid setting: every problem, as bin/agenthost lists them, and exit 2", { timeout: 120_000 }, async () => {
  const cwd = mkdtempSync(path.join(dir, "invalid-"));
  const run = await runDevUntilExit(cwd, { PORT: "eighty", AUTH_MODE: "open", METRICS_PORT: "0" });
  assert.equal(run.code, 2, run.stdout + run.stderr);
  assert.equal(run.stdout, "");
  assert.equal(run.stderr, "agenthost cannot start; fix the configuration:\n  - PORT must be an integer\n  - AUTH_MODE must be trusted or token\n");
});
