// BUILTIN_AGENTS: which of the built-in demo agents are served. Those left out are not listed and
// answer 404 on every route that names them (their own routes and the Platform API's assistants and
// runs); an unknown name, or a DEFAULT_AGENT left out, refuses startup in one line.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { builtinAgents } from "../../src/agents/builtin/index.ts";
import { AgentRegistryError } from "../../src/agents/registry.ts";
import { ConfigError, loadConfig } from "../../src/config/load.ts";
import { BUILTIN_AGENT_NAMES } from "../../src/config/schema.ts";
import { assistantIdOf } from "../../src/platform/assistants.ts";
import { call, startService, type RunningService } from "../helpers/service.ts";

const ROOT = path.resolve(import.meta.dirname, "../..");
const base = { AUTH_SECRET: "s3cret", USE_FAKE_MODEL: "true" };

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig({ ...base, ...env });
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return [...error.problems];
  }
  assert.fail("configuration was accepted");
}

test("BUILTIN_AGENTS: every built-in by default, a comma list in the built-ins' own order, or none", () => {
  assert.deepEqual(loadConfig(base).BUILTIN_AGENTS, ["chatbot-agent", "create-agent", "deep-agent"]);
  assert.deepEqual(loadConfig({ ...base, BUILTIN_AGENTS: "  " }).BUILTIN_AGENTS, ["chatbot-agent", "create-agent", "deep-agent"]);
  assert.deepEqual(loadConfig({ ...base, BUILTIN_AGENTS: " deep-agent , chatbot-agent,deep-agent" }).BUILTIN_AGENTS, ["chatbot-agent", "deep-agent"]);
  assert.deepEqual(loadConfig({ ...base, BUILTIN_AGENTS: "None" }).BUILTIN_AGENTS, []);
});

test("BUILTIN_AGENTS: unknown names, none mixed with names, or an empty list are one line naming the valid ones", () => {
  assert.deepEqual(problems({ BUILTIN_AGENTS: "chatbot-agent,deep_agent,Chatbot-Agent" }), [
    'BUILTIN_AGENTS names "deep_agent", "Chatbot-Agent", which are not built-in agents: write a comma list of chatbot-agent, create-agent, deep-agent, or none',
  ]);
  assert.deepEqual(problems({ BUILTIN_AGENTS: "echo" }), [
    'BUILTIN_AGENTS names "echo", which is not a built-in agent: write a comma list of chatbot-agent, create-agent, deep-agent, or none',
  ]);
  assert.deepEqual(problems({ BUILTIN_AGENTS: "none,deep-agent" }), [
    "BUILTIN_AGENTS mixes none with agent names: write none alone, or a comma list of chatbot-agent, create-agent, deep-agent",
  ]);
  assert.deepEqual(problems({ BUILTIN_AGENTS: ", ," }), [
    "BUILTIN_AGENTS lists no agent: write a comma list of chatbot-agent, create-agent, deep-agent, or none",
  ]);
});

test("the configuration's list of built-in names is exactly the built-in agents", () => {
  const all = builtinAgents(loadConfig(base));
  assert.deepEqual(all.map((agent) => agent.name), [...BUILTIN_AGENT_NAMES]);
  assert.deepEqual(builtinAgents(loadConfig({ ...base, BUILTIN_AGENTS: "deep-agent" })).map((agent) => agent.name), ["deep-agent"]);
});

describe("BUILTIN_AGENTS=chatbot-agent: the other built-ins are not served", () => {
  let service: RunningService;
  before(async () => {
    service = await startService({ BUILTIN_AGENTS: "chatbot-agent" });
  });
  after(() => service.close());

  test("/info lists only the chosen agent", async () => {
    const info = (await (await call(service, "GET", "/info")).json()) as { agents: Array<{ key: string }>; default_agent: string };
    assert.deepEqual(info.agents.map((agent) => agent.key), ["chatbot-agent"]);
    assert.equal(info.default_agent, "chatbot-agent");
  });

  test("the chosen agent answers; the others answer 404 unknown_agent on their own routes", async () => {
    const body = { input: { message: "hello" }, thread_id: "t1" };
    assert.equal((await call(service, "POST", "/chatbot-agent/invoke", body)).status, 200);
    for (const agent of ["deep-agent", "create-agent"]) {
      for (const [method, route, payload] of [
        ["POST", `/${agent}/invoke`, body],
        ["POST", `/${agent}/stream`, body],
        ["GET", `/${agent}/history?thread_id=t1`, undefined],
        ["POST", `/${agent}/feedback`, { run_id: "r1", key: "thumbs", score: 1 }],
      ] as const) {
        const response = await call(service, method, route, payload);
        assert.equal(response.status, 404, `${method} ${route}`);
        assert.equal(((await response.json()) as { error_code: string }).error_code, "unknown_agent", `${method} ${route}`);
      }
    }
  });

  test("the Platform API: the others are no assistant, and runs naming them answer 404", async () => {
    const search = (await (await call(service, "POST", "/assistants/search", {})).json()) as Array<{ graph_id: string }>;
    assert.deepEqual(search.map((assistant) => assistant.graph_id), ["chatbot-agent"]);
    assert.equal(await (await call(service, "POST", "/assistants/count", {})).json(), 1);
    assert.equal((await call(service, "GET", `/assistants/${assistantIdOf("chatbot-agent")}`)).status, 200);
    for (const id of ["deep-agent", assistantIdOf("deep-agent"), assistantIdOf("create-agent")]) {
      assert.equal((await call(service, "GET", `/assistants/${id}`)).status, 404, id);
    }
    const thread = (await (await call(service, "POST", "/threads", {})).json()) as { thread_id: string };
    const input = { messages: [{ role: "user", content: "hi" }] };
    for (const assistant_id of ["deep-agent", assistantIdOf("deep-agent")]) {
      const onThread = await call(service, "POST", `/threads/${thread.thread_id}/runs/wait`, { assistant_id, input });
      assert.equal(onThread.status, 404, assistant_id);
      assert.equal(((await onThread.json()) as { error_code: string }).error_code, "unknown_agent");
      assert.equal((await call(service, "POST", "/runs/wait", { assistant_id, input })).status, 404, assistant_id);
    }
  });
});

test("BUILTIN_AGENTS=none with AGENT_PATHS agents: only those are served, and one may take a built-in's name", async () => {
  // Inside the checkout, so the agent file resolves @langchain/* from its node_modules.
  mkdirSync(path.join(ROOT, "test/artifacts"), { recursive: true });
  const folder = mkdtempSync(path.join(ROOT, "test/artifacts", "builtin-agents-"));
  const file = path.join(folder, "own-deep-agent.ts");
  writeFileSync(
    file,
    `import { AIMessage } from "@langchain/core/messages";
import { MessagesAnnotation, StateGraph } from "@langchain/langgraph";
export const ownDeepAgent = new StateGraph(MessagesAnnotation)
  .addNode("answer", () => ({ messages: [new AIMessage("my own deep-agent")] }))
  .addEdge("__start__", "answer")
  .compile({ name: "deep-agent" });
`,
  );
  const service = await startService({
    BUILTIN_AGENTS: "none",
    AGENT_PATHS: JSON.stringify(["./test/fixtures/agents/slow-agent.ts:slowAgent", `${file}:ownDeepAgent`]),
    DEFAULT_AGENT: "slow-agent",
  });
  try {
    const info = (await (await call(service, "GET", "/info")).json()) as { agents: Array<{ key: string }> };
    assert.deepEqual(info.agents.map((agent) => agent.key), ["slow-agent", "deep-agent"]);
    assert.equal((await call(service, "POST", "/chatbot-agent/invoke", { input: { message: "hi" } })).status, 404);
    const own = await call(service, "POST", "/deep-agent/invoke", { input: { message: "hi" } });
    assert.equal(own.status, 200);
    assert.equal(((await own.json()) as { content: unknown }).content, "my own deep-agent");
  } finally {
    await service.close();
    rmSync(folder, { recursive: true, force: true });
  }
});

test("a DEFAULT_AGENT that BUILTIN_AGENTS leaves out refuses startup, naming both settings and what is served", async () => {
  await assert.rejects(
    startService({ BUILTIN_AGENTS: "deep-agent,create-agent" }),
    (error: Error) =>
      error instanceof AgentRegistryError &&
      error.message ===
        'agenthost cannot start: DEFAULT_AGENT "chatbot-agent" is a built-in agent BUILTIN_AGENTS leaves out: add it to BUILTIN_AGENTS, or set DEFAULT_AGENT to an agent that is served (served: create-agent, deep-agent)',
  );
  await assert.rejects(startService({ BUILTIN_AGENTS: "none" }), /DEFAULT_AGENT "chatbot-agent" is a built-in agent BUILTIN_AGENTS leaves out: .*\(served: none\)$/);
});

test("bin/agenthost: an unknown BUILTIN_AGENTS name is one line on stderr and exit 2, before any worker", () => {
  const result = spawnSync(path.join(ROOT, "bin/agenthost"), [], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, AGENTHOST_DOTENV: "off", ...base, BUILTIN_AGENTS: "chatbot-agent,deep", HOST: "127.0.0.1", PORT: "0", METRICS_PORT: "0" },
    encoding: "utf8",
    timeout: 60_000,
  });
  assert.equal(result.status, 2, result.stderr);
  assert.equal(result.stderr, 'agenthost cannot start: BUILTIN_AGENTS names "deep", which is not a built-in agent: write a comma list of chatbot-agent, create-agent, deep-agent, or none\n');
  assert.equal(result.stdout, "");
});
