// `npm run dev` (scripts/dev.mjs) as a developer runs it: one worker on 127.0.0.1, no token needed,
// the fake model, readable log lines, and a restart when an AGENT_PATHS file changes.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, test } from "node:test";
import { eventually, freePort, ROOT } from "./cluster-helper.ts";

// Inside the checkout, so the agent file resolves @langchain/* from its node_modules.
mkdirSync(path.join(ROOT, "test/artifacts"), { recursive: true });
const dir = mkdtempSync(path.join(ROOT, "test/artifacts", "dev-loop-"));
after(() => rmSync(dir, { recursive: true, force: true }));

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

test("npm run dev: one worker on 127.0.0.1, the fake model without a token, readable logs, a restart on change", { timeout: 120_000 }, async () => {
  const agentFile = path.join(dir, "agents.ts");
  writeFileSync(agentFile, agentSource("first version"));
  const [port, metricsPort] = [await freePort(), await freePort()];
  const child = spawn(process.execPath, [path.join(ROOT, "scripts/dev.mjs")], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: process.env.HOME ?? dir,
      PORT: String(port),
      METRICS_PORT: String(metricsPort),
      FILEDB_DB_PATH: path.join(dir, "dev.sqlite"),
      AGENT_PATHS: JSON.stringify([`${agentFile}:echo`]),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (c: string) => (out += c));
  child.stderr.setEncoding("utf8").on("data", (c: string) => (out += c));
  const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
  const url = `http://127.0.0.1:${port}`;
  try {
    await eventually(async () => (await invoke(url, "echo")).content === "first version", 60_000, "the dev service answers");
    const fake = await invoke(url, "chatbot-agent");
    assert.equal(fake.status, 200, "no token needed in development");
    assert.match(String(fake.content), /fake model/);
    assert.match(out, new RegExp(`^\\d\\d:\\d\\d:\\d\\d\\.\\d{3} INFO  worker 1  listening  host=127\\.0\\.0\\.1 port=${port} backend=filedb$`, "m"));
    assert.equal(out.match(/worker forked/g)?.length, 1, "one worker");
    assert.doesNotMatch(out, /^\{"level"/m, "no raw JSON lines");

    writeFileSync(agentFile, agentSource("second version"));
    await eventually(async () => (await invoke(url, "echo")).content === "second version", 60_000, "restarted with the change");
    assert.match(out, /Restarting/);
  } finally {
    child.kill("SIGTERM");
  }
  assert.equal(await exited, 0, out);
});
