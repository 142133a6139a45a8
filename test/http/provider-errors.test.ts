import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { errorCatalogue } from "../../src/http/api-error.ts";
import { DEFAULT_REFUSAL_TEXT } from "../../src/models/finish-reason.ts";
import { startService, type RunningService } from "../helpers/service.ts";
import { closedPort, PROTOCOLS, run, type Outcome, type Protocol } from "../fixtures/providers/events.ts";
import {
  FAKE_PROVIDER_ANSWER,
  FAKE_PROVIDER_KEY,
  PROVIDER_ERROR_TEXT,
  REFUSAL_TEXT,
  startFakeProvider,
  type FakeProvider,
} from "../fixtures/providers/fake-provider.ts";

/**
 * Real provider packages (@langchain/openai, @langchain/anthropic, @langchain/google-genai) against a
 * local server speaking their wire formats, through the service's undici pool. Every failure mapping
 * is checked on invoke, SSE and JSON Lines; the responses and the captured logs never contain the
 * key or the provider's error text.
 */

const APIS = ["openai", "anthropic"] as const;

const BEHAVIOURS = ["ok", "length", "refusal", "401", "403", "429", "429-bare", "500", "hang", "truncate", "slow-explicit"] as const;

interface Expected {
  status: number;
  code: string;
}

const FAILURES: Record<string, Expected> = {
  "401": { status: 503, code: "model_authentication_failed" },
  "403": { status: 503, code: "model_authentication_failed" },
  "429": { status: 429, code: "model_rate_limited" },
  "429-bare": { status: 429, code: "model_rate_limited" },
  "500": { status: 503, code: "model_unavailable" },
  hang: { status: 504, code: "model_timeout" },
  truncate: { status: 503, code: "model_unavailable" },
  refused: { status: 503, code: "model_unavailable" },
};

const FIXED_TEXT: Record<string, string> = {
  model_authentication_failed: errorCatalogue.model_authentication_failed.detail,
  model_rate_limited: errorCatalogue.model_rate_limited.detail,
  model_unavailable: errorCatalogue.model_unavailable.detail,
  model_timeout: errorCatalogue.model_timeout.detail,
};

function modelConfigs(provider: FakeProvider, refusedPort: number): Record<string, unknown> {
  const configs: Record<string, unknown> = {};
  for (const api of APIS) {
    const base_url = api === "openai" ? `${provider.url}/v1` : provider.url;
    for (const behaviour of BEHAVIOURS) {
      const model = behaviour === "slow-explicit" ? "behave-hang" : `behave-${behaviour}`;
      configs[`${api}-${behaviour}`] = {
        provider: api,
        model,
        base_url,
        api_key: FAKE_PROVIDER_KEY,
        // An explicit timeout wins over LLM_HTTP_READ_TIMEOUT (1 s here).
        ...(behaviour === "slow-explicit" ? { timeout: 3 } : {}),
      };
    }
    configs[`${api}-refused`] = {
      provider: api,
      model: "behave-ok",
      base_url: api === "openai" ? `http://127.0.0.1:${refusedPort}/v1` : `http://127.0.0.1:${refusedPort}`,
      api_key: FAKE_PROVIDER_KEY,
    };
    configs[`${api}-500-retried`] = { provider: api, model: "behave-500", base_url, api_key: FAKE_PROVIDER_KEY, max_retries: 1 };
  }
  configs["google-ok"] = { provider: "google", model: "behave-ok", base_url: provider.url, api_key: FAKE_PROVIDER_KEY };
  configs["google-401"] = { provider: "google", model: "behave-401", base_url: provider.url, api_key: FAKE_PROVIDER_KEY };
  configs["google-length"] = { provider: "google", model: "behave-length", base_url: provider.url, api_key: FAKE_PROVIDER_KEY };
  return configs;
}

function body(key: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { input: { message: "Say hello." }, model_config_key: key, ...extra };
}

/** The final message of an invoke, or of a stream (its last `message` event). */
function finalMessage(protocol: Protocol, outcome: Outcome): Record<string, unknown> {
  if (protocol === "invoke") return outcome.body!;
  const messages = outcome.events.filter((e) => e.type === "message");
  assert.ok(messages.length > 0, `no message event in ${outcome.text}`);
  return messages.at(-1)!.content as Record<string, unknown>;
}

function assertFailure(protocol: Protocol, outcome: Outcome, expected: Expected, label: string): void {
  if (protocol === "invoke") {
    assert.equal(outcome.status, expected.status, `${label}: ${outcome.text}`);
    assert.equal(outcome.body?.error_code, expected.code, label);
    assert.equal(outcome.body?.detail, FIXED_TEXT[expected.code], label);
  } else {
    // The stream's headers went out before the provider answered: a 200 with an error event.
    assert.equal(outcome.status, 200, label);
    const last = outcome.events.at(-1);
    assert.deepEqual(last, { type: "error", content: FIXED_TEXT[expected.code], error_code: expected.code }, `${label}: ${outcome.text}`);
    assert.equal(outcome.done, false, `${label}: no [DONE] after an error`);
  }
}

describe("provider failures through the real provider packages", { concurrency: false }, () => {
  let provider: FakeProvider;
  let production: RunningService;
  let development: RunningService;
  const transcripts: string[] = [];

  before(async () => {
    provider = await startFakeProvider();
    const env = {
      MODEL_CONFIGS: JSON.stringify(modelConfigs(provider, await closedPort())),
      LLM_HTTP_MAX_RETRIES: "0",
      LLM_HTTP_READ_TIMEOUT: "1",
      LOG_LEVEL: "trace",
    };
    production = await startService({ ...env, ENV_MODE: "production" });
    development = await startService({ ...env, ENV_MODE: "development" });
  });
  after(async () => {
    await production?.close();
    await development?.close();
    await provider?.close();
  });

  async function record(service: RunningService, protocol: Protocol, key: string, extra?: Record<string, unknown>): Promise<Outcome> {
    const outcome = await run(service, protocol, "chatbot-agent", body(key, extra));
    const headers: string[] = [];
    outcome.headers.forEach((value, name) => headers.push(`${name}: ${value}`));
    transcripts.push(`${headers.join("\n")}\n${outcome.text}`);
    return outcome;
  }

  for (const api of APIS) {
    for (const [behaviour, expected] of Object.entries(FAILURES)) {
      test(`${api} ${behaviour} → ${expected.status} ${expected.code} on invoke, SSE and JSON Lines`, async () => {
        for (const protocol of PROTOCOLS) {
          const outcome = await record(production, protocol, `${api}-${behaviour}`);
          assertFailure(protocol, outcome, expected, `${api} ${behaviour} ${protocol}`);
          if (protocol === "invoke" && behaviour === "429") assert.equal(outcome.headers.get("retry-after"), "7");
          if (protocol === "invoke" && behaviour === "429-bare") assert.equal(outcome.headers.get("retry-after"), null);
        }
      });
    }

    test(`${api}: a stream cut after tokens ends with the unavailable error event`, async () => {
      for (const protocol of ["sse", "jsonl"] as const) {
        const outcome = await record(production, protocol, `${api}-truncate`, { stream_tokens: true });
        const tokens = outcome.events.filter((e) => e.type === "token").map((e) => e.content).join("");
        assert.ok(tokens.startsWith("Hello"), `tokens before the cut: ${outcome.text}`);
        assertFailure(protocol, outcome, FAILURES.truncate!, `${api} truncate ${protocol}`);
      }
    });

    test(`${api}: answers, output limit (finish_reason length) and refusals on invoke, SSE and JSON Lines`, async () => {
      for (const protocol of PROTOCOLS) {
        for (const stream_tokens of protocol === "invoke" ? [undefined] : [true, false]) {
          const extra = stream_tokens === undefined ? {} : { stream_tokens };
          const ok = finalMessage(protocol, await record(production, protocol, `${api}-ok`, extra));
          assert.equal(ok.type, "ai");
          assert.equal(ok.content, FAKE_PROVIDER_ANSWER);
          assert.equal((ok.response_metadata as Record<string, unknown>).finish_reason, "stop");
          assert.equal((ok.usage_metadata as Record<string, unknown>).input_tokens, 11);

          const length = finalMessage(protocol, await record(production, protocol, `${api}-length`, extra));
          assert.equal((length.response_metadata as Record<string, unknown>).finish_reason, "length", `${api} ${protocol}`);

          const refusal = finalMessage(protocol, await record(production, protocol, `${api}-refusal`, extra));
          const expectedText = api === "openai" ? REFUSAL_TEXT : DEFAULT_REFUSAL_TEXT;
          assert.equal(refusal.content, expectedText, `${api} ${protocol} ${JSON.stringify(refusal)}`);
          assert.equal((refusal.response_metadata as Record<string, unknown>).refusal, expectedText);
        }
      }
    });

    test(`${api}: an explicit model timeout wins over LLM_HTTP_READ_TIMEOUT`, async () => {
      const started = performance.now();
      const outcome = await record(production, "invoke", `${api}-slow-explicit`);
      const elapsed = performance.now() - started;
      assertFailure("invoke", outcome, FAILURES.hang!, `${api} explicit timeout`);
      // The pool's 1-second read timeout did not cut it short: the model's own 3 s applied.
      assert.ok(elapsed >= 2_500, `gave up after ${Math.round(elapsed)} ms`);
    });

    test(`${api}: retries follow LLM_HTTP_MAX_RETRIES unless the model sets max_retries`, async () => {
      const before = provider.requests.length;
      await record(production, "invoke", `${api}-500`);
      assert.equal(provider.requests.length - before, 1, "LLM_HTTP_MAX_RETRIES=0: one attempt");
      const mid = provider.requests.length;
      const outcome = await record(production, "invoke", `${api}-500-retried`);
      assert.equal(outcome.body?.error_code, "model_unavailable");
      assert.equal(provider.requests.length - mid, 2, "max_retries=1: two attempts");
    });
  }

  test("the requests reached the provider with the configured key, through the pool", () => {
    const openai = provider.requests.find((r) => r.path === "/v1/chat/completions");
    const anthropic = provider.requests.find((r) => r.path === "/v1/messages");
    assert.equal(openai?.headers.authorization, `Bearer ${FAKE_PROVIDER_KEY}`);
    assert.equal(anthropic?.headers["x-api-key"], FAKE_PROVIDER_KEY);
  });

  test("google: answers, output limit and credential rejection", async () => {
    const ok = await record(production, "invoke", "google-ok");
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body?.content, FAKE_PROVIDER_ANSWER);
    const length = await record(production, "invoke", "google-length");
    assert.equal((length.body?.response_metadata as Record<string, unknown>).finish_reason, "length", length.text);
    for (const protocol of PROTOCOLS) {
      assertFailure(protocol, await record(production, protocol, "google-401"), FAILURES["401"]!, `google 401 ${protocol}`);
    }
  });

  test("credential rejection in development mode shows the same fixed text", async () => {
    for (const api of [...APIS, "google"]) {
      for (const protocol of PROTOCOLS) {
        const outcome = await record(development, protocol, `${api}-401`);
        assertFailure(protocol, outcome, FAILURES["401"]!, `development ${api} ${protocol}`);
      }
    }
  });

  test("no response and no log line holds the key or the provider's error text", () => {
    const haystacks = [
      ...transcripts,
      ...production.logs.map((line) => JSON.stringify(line)),
      ...development.logs.map((line) => JSON.stringify(line)),
    ];
    assert.ok(transcripts.length > 80, `checked ${transcripts.length} responses`);
    const needles = [FAKE_PROVIDER_KEY, FAKE_PROVIDER_KEY.slice(0, 12), FAKE_PROVIDER_KEY.slice(-8), PROVIDER_ERROR_TEXT, "Incorrect API key"];
    for (const needle of needles) {
      const hits = haystacks.filter((text) => text.includes(needle));
      assert.equal(hits.length, 0, `"${needle}" found in: ${hits[0]?.slice(0, 300)}`);
    }
    // The failures were logged (without their text).
    assert.ok(production.logs.some((line) => line.error_code === "model_authentication_failed"));
  });
});
