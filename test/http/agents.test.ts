import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { AgentRegistryError } from "../../src/agents/registry.ts";
import { call, startService } from "../helpers/service.ts";

const FIXTURES = "./test/fixtures/spine-agents.ts";

async function refusal(env: Record<string, string>): Promise<string> {
  try {
    const service = await startService(env);
    await service.close();
  } catch (error) {
    assert.ok(error instanceof AgentRegistryError, String(error));
    return error.message;
  }
  assert.fail("startup was not refused");
}

test("AGENT_PATHS loads Agents and compiled graphs; a graphFactory runs once per startup", async () => {
  const service = await startService({
    AGENT_PATHS: JSON.stringify([`${FIXTURES}:factoryAgent`, `${FIXTURES}:whoami`]),
    DEFAULT_AGENT: "factory-agent",
    MULTIMODAL_MAX_ATTACHMENTS: "4",
  });
  try {
    for (let i = 0; i < 3; i++) {
      const res = await call(service, "POST", "/invoke", { input: { message: "x" } });
      assert.equal(((await res.json()) as { content: string }).content, "factory calls: 1");
    }
    const info = (await (await call(service, "GET", "/info")).json()) as {
      default_agent: string;
      agents: Array<{ key: string }>;
      limits: { max_attachments: number };
    };
    assert.equal(info.default_agent, "factory-agent");
    assert.deepEqual(info.limits, { max_attachments: 4 }, "what one request may carry, for front ends");
    assert.ok(info.agents.some((a) => a.key === "whoami"), "a compiled graph is named by the graph's name");
    assert.ok(Object.isFrozen(service.runtime.registry));
  } finally {
    await service.close();
  }
});

test("registry problems stop startup naming the offending string", async () => {
  assert.match(await refusal({ AGENT_PATHS: JSON.stringify(["./test/fixtures/missing-file.ts:agent"]) }), /"\.\/test\/fixtures\/missing-file\.ts:agent" does not resolve/);
  assert.match(await refusal({ AGENT_PATHS: JSON.stringify([`${FIXTURES}:nothingHere`]) }), /no export named "nothingHere"/);
  assert.match(await refusal({ AGENT_PATHS: JSON.stringify([`${FIXTURES}:notAnAgent`]) }), /neither an Agent nor a compiled graph/);
  assert.match(await refusal({ AGENT_PATHS: JSON.stringify(["no-colon-here"]) }), /"no-colon-here" names no export: entries look like "<module or file>:<export name>"/);
  assert.match(await refusal({ AGENT_PATHS: JSON.stringify([`${FIXTURES}:duplicateChatbot`]) }), /an agent named "chatbot-agent" is already registered/);
  assert.match(await refusal({ DEFAULT_AGENT: "ghost" }), /DEFAULT_AGENT "ghost" is not a registered agent/);
});

test("bin/agenthost refuses to start on bad configuration, listing every problem, exit non-zero", () => {
  const result = spawnSync("bin/agenthost", [], {
    env: { PATH: process.env.PATH, AGENTHOST_DOTENV: "off", AUTH_MODE: "nope", AGENT_PATHS: "[", FEEDBACK_SIGNING_SECRET: "short", USE_FAKE_MODEL: "true" },
    encoding: "utf8",
    timeout: 60_000,
  });
  assert.notEqual(result.status, 0);
  for (const text of ["AUTH_MODE", "AGENT_PATHS is not valid JSON", "FEEDBACK_SIGNING_SECRET must be at least 32", "ENV_MODE=production requires credentials"]) {
    assert.ok(result.stderr.includes(text), `${text} missing from:\n${result.stderr}`);
  }
  assert.ok(!result.stderr.includes("    at "), "no stack trace");

  const registry = spawnSync("bin/agenthost", [], {
    // Ports of its own (0): the default PORT and METRICS_PORT may be taken by another process on this machine.
    env: { PATH: process.env.PATH, AGENTHOST_DOTENV: "off", AUTH_SECRET: "x", USE_FAKE_MODEL: "true", DEFAULT_AGENT: "ghost", MEMORY_BACKEND: "memory", PORT: "0", METRICS_PORT: "0", HOST: "127.0.0.1" },
    encoding: "utf8",
    timeout: 60_000,
  });
  assert.notEqual(registry.status, 0);
  assert.match(registry.stderr, /DEFAULT_AGENT "ghost" is not a registered agent/);
});
