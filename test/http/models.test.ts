import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { ConfigError, loadConfig } from "../../src/config/load.ts";
import { FakeChatModel } from "../../src/models/fake-chat-model.ts";
import { createProviderHttpPool, poolSettings } from "../../src/models/http-pool.ts";
import { REQUEST_MODEL_KEY } from "../../src/contract/request-model-key.ts";
import { waitFor } from "../helpers/raw-http.ts";
import { call, startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";
import { FAKE_PROVIDER_ANSWER, FAKE_PROVIDER_KEY, startFakeProvider, type FakeProvider } from "../fixtures/providers/fake-provider.ts";

/** Request-time model selection, the default and deep-agent model choice, and the startup refusal. */

const ask = (extra: Record<string, unknown> = {}) => ({ input: { message: "Hello?" }, ...extra });

async function json(response: Response): Promise<Record<string, unknown>> {
  return (await response.json()) as Record<string, unknown>;
}

describe("request-time model selection", { concurrency: false }, () => {
  let provider: FakeProvider;
  let service: RunningService;

  before(async () => {
    provider = await startFakeProvider();
    service = await startService({
      // The worker default stays the fake model; requests pick provider models.
      OPENAI_API_KEY: FAKE_PROVIDER_KEY,
      OPENAI_BASE_URL: `${provider.url}/v1`,
      LLM_HTTP_MAX_RETRIES: "0",
      MODEL_CONFIGS: JSON.stringify({
        "fast-openai": { provider: "openai", model: "behave-ok", base_url: `${provider.url}/v1`, api_key: FAKE_PROVIDER_KEY, temperature: 0.2, max_tokens: 64 },
        "claude-like": { provider: "anthropic", model: "behave-ok", base_url: provider.url, api_key_env: "AGENTHOST_TEST_ANTHROPIC_KEY" },
      }),
      AGENTHOST_TEST_ANTHROPIC_KEY: FAKE_PROVIDER_KEY,
    });
  });
  after(async () => {
    await service?.close();
    await provider?.close();
  });

  test("without a selection the worker default (the fake model) answers", async () => {
    const response = await call(service, "POST", "/chatbot-agent/invoke", ask());
    assert.equal(response.status, 200);
    assert.equal((await json(response)).content, "This is a test response from the fake model.");
  });

  test("model_config_key reaches the graph: chatbot-agent and create-agent answer with that model", async () => {
    for (const agent of ["chatbot-agent", "create-agent"]) {
      const before = provider.requests.length;
      const response = await call(service, "POST", `/${agent}/invoke`, ask({ model_config_key: "fast-openai" }));
      const body = await json(response);
      assert.equal(response.status, 200, JSON.stringify(body));
      assert.equal(body.content, FAKE_PROVIDER_ANSWER);
      const sent = provider.requests.slice(before).find((r) => r.path === "/v1/chat/completions");
      assert.equal(sent?.body.model, "behave-ok");
      assert.equal(sent?.body.temperature, 0.2);
      assert.equal(sent?.body.max_tokens ?? sent?.body.max_completion_tokens, 64);
      if (agent === "create-agent") {
        const tools = (sent?.body.tools as Array<{ function: { name: string } }>).map((t) => t.function.name).sort();
        assert.deepEqual(tools, ["add", "multiply"]);
      }
    }
  });

  test("api_key_env names the variable holding the key", async () => {
    const before = provider.requests.length;
    const response = await call(service, "POST", "/chatbot-agent/invoke", ask({ model_config_key: "claude-like" }));
    assert.equal(response.status, 200);
    const sent = provider.requests.slice(before).find((r) => r.path === "/v1/messages");
    assert.equal(sent?.headers["x-api-key"], FAKE_PROVIDER_KEY);
  });

  test("custom messages in the conversation never reach the provider", async () => {
    for (const agent of ["chatbot-agent", "create-agent"]) {
      const thread_id = `record-${agent}`;
      const added = await call(service, "POST", `/${agent}/history/add_messages`, {
        thread_id,
        messages: [
          { type: "human", content: "Hello" },
          { type: "custom", content: "record only", custom_data: { widget: "chart" } },
        ],
      });
      assert.equal(added.status, 201);
      const before = provider.requests.length;
      const response = await call(service, "POST", `/${agent}/invoke`, ask({ thread_id, model_config_key: "fast-openai" }));
      assert.equal(response.status, 200, agent);
      const sent = provider.requests.slice(before).find((r) => r.path === "/v1/chat/completions")!;
      const roles = (sent.body.messages as Array<{ role: string }>).map((m) => m.role);
      assert.ok(!roles.includes("custom"), `${agent}: ${roles.join(",")}`);
      assert.equal(JSON.stringify(sent.body).includes("record only"), false, agent);
    }
  });

  test("the streams honour the selection too", async () => {
    for (const route of ["stream", "stream/jsonl"]) {
      const before = provider.requests.length;
      const response = await call(service, "POST", `/chatbot-agent/${route}`, ask({ model_config_key: "fast-openai" }));
      const text = await response.text();
      assert.ok(text.includes(FAKE_PROVIDER_ANSWER), text);
      assert.equal(provider.requests.slice(before).at(-1)?.body.stream, true);
    }
  });

  test("model_name with model_provider uses the provider's variables", async () => {
    const before = provider.requests.length;
    const response = await call(service, "POST", "/chatbot-agent/invoke", ask({ model_name: "behave-ok", model_provider: "openai" }));
    assert.equal(response.status, 200);
    assert.equal((await json(response)).content, FAKE_PROVIDER_ANSWER);
    assert.equal(provider.requests.slice(before)[0]?.headers.authorization, `Bearer ${FAKE_PROVIDER_KEY}`);
    // A provider prefix in the name is enough.
    const byName = await call(service, "POST", "/chatbot-agent/invoke", ask({ model_name: "gpt-behave-ok" }));
    assert.equal(byName.status, 200);
    assert.equal(provider.requests.at(-1)?.body.model, "gpt-behave-ok");
  });

  test("model_provider alone selects that provider's default model; fake is the worker's fake model", async () => {
    const before = provider.requests.length;
    const response = await call(service, "POST", "/chatbot-agent/invoke", ask({ model_provider: "openai", model_name: null }));
    assert.equal(response.status, 200);
    assert.equal(provider.requests.slice(before).find((r) => r.path === "/v1/chat/completions")?.body.model, "gpt-4o-mini");
    const fake = await call(service, "POST", "/chatbot-agent/invoke", ask({ model_provider: "fake" }));
    assert.equal(fake.status, 200);
    assert.equal((await json(fake)).content, "This is a test response from the fake model.");
  });

  test("selections that cannot be served are 422 with a reason", async () => {
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ["chatbot-agent", { model_config_key: "nope" }, /model_config_key "nope" is not a configured model/],
      ["chatbot-agent", { model_provider: "anthropic", model_name: "claude-x" }, /"anthropic" is not configured/],
      ["chatbot-agent", { model_provider: "mistral", model_name: "m" }, /"mistral" is not supported/],
      ["chatbot-agent", { model_provider: "anthropic" }, /"anthropic" is not configured/],
      ["chatbot-agent", { model_provider: "mistral" }, /"mistral" is not supported/],
      ["chatbot-agent", { model_config_key: "fast-openai", model_name: "x" }, /not both/],
      ["deep-agent", { model_config_key: "fast-openai" }, /does not support runtime model selection/],
      ["deep-agent", { model_name: "gpt-4o" }, /does not support runtime model selection/],
      ["chatbot-agent", { agent_config: { [REQUEST_MODEL_KEY]: "x" } }, /agent_config may not set "agenthost_model"/],
    ];
    for (const [agent, extra, detail] of cases) {
      const response = await call(service, "POST", `/${agent}/invoke`, ask(extra));
      const body = await json(response);
      assert.equal(response.status, 422, JSON.stringify(extra));
      assert.match(String(body.detail), detail);
    }
  });
});

describe("default and deep-agent models", { concurrency: false }, () => {
  let provider: FakeProvider;
  before(async () => {
    provider = await startFakeProvider();
  });
  after(async () => provider?.close());

  test("provider variables with DEFAULT_MODEL make the worker default", async () => {
    const service = await startService({
      USE_FAKE_MODEL: undefined,
      OPENAI_API_KEY: FAKE_PROVIDER_KEY,
      OPENAI_BASE_URL: `${provider.url}/v1`,
      DEFAULT_MODEL: "behave-ok",
    });
    try {
      for (const agent of ["chatbot-agent", "deep-agent"]) {
        const before = provider.requests.length;
        const response = await call(service, "POST", `/${agent}/invoke`, ask());
        assert.equal(response.status, 200, agent);
        assert.equal((await json(response)).content, FAKE_PROVIDER_ANSWER);
        assert.equal(provider.requests.slice(before)[0]?.body.model, "behave-ok");
      }
    } finally {
      await service.close();
    }
  });

  test("MODEL_CONFIGS.deep_agent is the deep agent's model; requests cannot switch it", async () => {
    const service = await startService({
      MODEL_CONFIGS: JSON.stringify({
        deep_agent: { provider: "anthropic", model: "behave-ok", base_url: provider.url, api_key: FAKE_PROVIDER_KEY },
      }),
      USE_FAKE_MODEL: undefined,
      OPENAI_API_KEY: FAKE_PROVIDER_KEY,
      OPENAI_BASE_URL: `${provider.url}/v1`,
      DEFAULT_MODEL: "openai:behave-default",
    });
    try {
      const before = provider.requests.length;
      const response = await call(service, "POST", "/deep-agent/invoke", ask());
      assert.equal(response.status, 200);
      const sent = provider.requests.slice(before);
      assert.deepEqual(sent.map((r) => [r.path, r.body.model]), [["/v1/messages", "behave-ok"]]);
    } finally {
      await service.close();
    }
  });

  test("USE_FAKE_MODEL=true selects the fake model for every agent, deep agent included", async () => {
    const service = await startService({
      MODEL_CONFIGS: JSON.stringify({ deep_agent: { provider: "openai", model: "behave-ok", base_url: `${provider.url}/v1`, api_key: "k" } }),
    });
    try {
      assert.ok(service.runtime.models.default instanceof FakeChatModel);
      assert.ok(service.runtime.models.deepAgent instanceof FakeChatModel);
    } finally {
      await service.close();
    }
  });

  test("startup refuses without a model, saying what to set", async () => {
    await assert.rejects(startService({ USE_FAKE_MODEL: undefined }), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, /USE_FAKE_MODEL=true/);
      assert.match(error.message, /OPENAI_API_KEY/);
      return true;
    });
    await assert.rejects(startService({ USE_FAKE_MODEL: undefined, DEFAULT_MODEL: "anthropic:claude-x", OPENAI_API_KEY: "k" }), /ANTHROPIC_API_KEY is not set/);
    await assert.rejects(startService({ MODEL_CONFIGS: JSON.stringify({ x: { provider: "anthropic", model: "m" } }) }), /MODEL_CONFIGS\.x \(anthropic\) has no api_key/);
    assert.throws(
      () => loadConfig({ MODEL_CONFIGS: JSON.stringify({ x: { provider: "openai", model: "m", api_key_env: "AGENTHOST_UNSET_VARIABLE" } }), ENV_MODE: "development" }),
      /api_key_env names AGENTHOST_UNSET_VARIABLE, which is not set/,
    );
  });

  test("bin/agenthost exits 2 with the message when no model is configured", async () => {
    const root = path.resolve(import.meta.dirname, "../..");
    const child = spawn(path.join(root, "bin/agenthost"), [], {
      // Ports of its own (0): the default METRICS_PORT may be taken by another process on this machine.
      env: { PATH: process.env.PATH, HOME: process.env.HOME, AGENTHOST_DOTENV: "off", AUTH_SECRET: TEST_TOKEN, PORT: "0", METRICS_PORT: "0", HOST: "127.0.0.1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    assert.equal(code, 2);
    assert.match(stderr, /no chat model is configured: set USE_FAKE_MODEL=true/);
  });
});

describe("the provider HTTP pool (LLM_HTTP_*)", () => {
  test("defaults, validation and undici settings", () => {
    const config = loadConfig({ ENV_MODE: "development", USE_FAKE_MODEL: "true" });
    assert.deepEqual(poolSettings(config), {
      connectionsPerOrigin: 1000,
      maxOrigins: 32,
      keepAliveTimeoutMs: 5000,
      connectTimeoutMs: 5000,
      readTimeoutMs: 600_000,
      shutdownTimeoutMs: 10_000,
    });
    assert.equal(config.LLM_HTTP_MAX_RETRIES, 2);
    assert.throws(
      () => loadConfig({ ENV_MODE: "development", LLM_HTTP_MAX_CONNECTIONS: "10", LLM_HTTP_MAX_KEEPALIVE_CONNECTIONS: "11" }),
      /LLM_HTTP_MAX_KEEPALIVE_CONNECTIONS \(11\) must not exceed LLM_HTTP_MAX_CONNECTIONS \(10\)/,
    );
    assert.throws(() => loadConfig({ ENV_MODE: "development", LLM_HTTP_ASYNC_TRANSPORT: "aiohttp" }), /LLM_HTTP_ASYNC_TRANSPORT/);
    assert.throws(() => loadConfig({ ENV_MODE: "development", LLM_HTTP_CONNECT_TIMEOUT: "0" }), /LLM_HTTP_CONNECT_TIMEOUT/);
  });

  test("the pool serves requests, and after close it refuses new ones", async () => {
    const provider = await startFakeProvider();
    const pool = createProviderHttpPool(loadConfig({ ENV_MODE: "development", LLM_HTTP_SHUTDOWN_TIMEOUT: "1" }));
    try {
      const response = await pool.fetch(`${provider.url}/v1/chat/completions`, { method: "POST", body: JSON.stringify({ model: "behave-ok" }) });
      assert.equal(response.status, 200);
      await response.arrayBuffer();
      // A held-open request does not keep close() waiting past LLM_HTTP_SHUTDOWN_TIMEOUT.
      const hanging = pool.fetch(`${provider.url}/v1/chat/completions`, { method: "POST", body: JSON.stringify({ model: "behave-hang" }) });
      hanging.catch(() => {});
      await waitFor(() => provider.hanging.size > 0, "the provider to hold the request");
      await pool.close();
      await assert.rejects(hanging);
      await assert.rejects(pool.fetch(`${provider.url}/v1/chat/completions`, { method: "POST", body: "{}" }));
    } finally {
      await pool.close();
      await provider.close();
    }
  });
});
