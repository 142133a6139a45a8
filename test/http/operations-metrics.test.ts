// Issue 19: the metrics SREs reach for first (model latency, time to first token, run duration,
// build info), route labels in the OpenAPI form with bounded cardinality, and CORS preflights.
import http from "node:http";
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { buildOpenApiDocument } from "../../src/http/openapi.ts";
import { ModelCallObserver, MODEL_LABEL_LIMIT } from "../../src/observability/model-calls.ts";
import { ServiceMetrics } from "../../src/observability/metrics.ts";
import { RawClient, waitFor } from "../helpers/raw-http.ts";
import { call, startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";

type Sample = { labels: Record<string, string | number>; value: number; metricName?: string };

async function samples(metrics: ServiceMetrics, name: string): Promise<Sample[]> {
  const json = await metrics.registry.getMetricsAsJSON();
  return json.flatMap((metric) => (metric.values as Sample[]).filter((v) => (v.metricName ?? metric.name) === name));
}

async function value(metrics: ServiceMetrics, name: string, labels: Record<string, string>): Promise<number> {
  const found = (await samples(metrics, name)).find((v) => Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want));
  return found?.value ?? 0;
}

describe("operations metrics", () => {
  let service: RunningService;
  before(async () => {
    service = await startService();
  });
  after(() => service.close());

  test("model calls are timed by agent, provider and model; streamed ones also to their first token", async () => {
    const { metrics } = service.runtime;
    const labels = { agent: "chatbot-agent", provider: "fake", model: "fake" };
    const callsBefore = await value(metrics, "agenthost_model_call_duration_seconds_count", { ...labels, outcome: "ok" });
    const firstBefore = await value(metrics, "agenthost_model_time_to_first_token_seconds_count", labels);

    assert.equal((await call(service, "POST", "/invoke", { input: { message: "hello" } })).status, 200);
    assert.equal(await value(metrics, "agenthost_model_call_duration_seconds_count", { ...labels, outcome: "ok" }), callsBefore + 1);
    // An invoke does not stream the model's tokens: no first-token time.
    assert.equal(await value(metrics, "agenthost_model_time_to_first_token_seconds_count", labels), firstBefore);

    const streamed = await call(service, "POST", "/stream", { input: { message: "hello there" }, stream_tokens: true });
    assert.equal(streamed.status, 200);
    assert.match(await streamed.text(), /"type":"token"/);
    assert.equal(await value(metrics, "agenthost_model_call_duration_seconds_count", { ...labels, outcome: "ok" }), callsBefore + 2);
    assert.equal(await value(metrics, "agenthost_model_time_to_first_token_seconds_count", labels), firstBefore + 1);
    const ttft = await value(metrics, "agenthost_model_time_to_first_token_seconds_sum", labels);
    const total = await value(metrics, "agenthost_model_call_duration_seconds_sum", { ...labels, outcome: "ok" });
    assert.ok(ttft > 0 && ttft <= total, `first token ${ttft}s within the calls' ${total}s`);
  });

  test("runs are timed by agent and outcome, failures included", async () => {
    const { metrics } = service.runtime;
    const ok = await value(metrics, "agenthost_run_duration_seconds_count", { agent: "chatbot-agent", outcome: "ok" });
    const runs = await value(metrics, "agenthost_runs_total", { agent: "chatbot-agent", outcome: "ok" });
    assert.equal((await call(service, "POST", "/invoke", { input: { message: "hi" } })).status, 200);
    assert.equal(await value(metrics, "agenthost_run_duration_seconds_count", { agent: "chatbot-agent", outcome: "ok" }), ok + 1);
    assert.equal(await value(metrics, "agenthost_runs_total", { agent: "chatbot-agent", outcome: "ok" }), runs + 1);
    const streamed = await call(service, "POST", "/stream", { input: { message: "hi" } });
    await streamed.text();
    // The stream's run is counted when its response closes, just after the client has read it all.
    for (let i = 0; i < 100 && (await value(metrics, "agenthost_run_duration_seconds_count", { agent: "chatbot-agent", outcome: "ok" })) < ok + 2; i++) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.equal(await value(metrics, "agenthost_run_duration_seconds_count", { agent: "chatbot-agent", outcome: "ok" }), ok + 2);
  });

  test("agenthost_build_info names the version, the Node.js version and the checkpoint backend", async () => {
    const builds = await samples(service.runtime.metrics, "agenthost_build_info");
    assert.equal(builds.length, 1);
    const pkg = (await import("../../package.json", { with: { type: "json" } })).default as { version: string };
    assert.deepEqual(builds[0]!.labels, { version: pkg.version, node_version: process.versions.node, backend: "memory" });
    assert.equal(builds[0]!.value, 1);
  });

  test("route labels are the OpenAPI paths; unknown paths share one label", async () => {
    const { metrics } = service.runtime;
    assert.equal((await call(service, "POST", "/chatbot-agent/invoke", { input: { message: "hi" } })).status, 200);
    assert.equal((await call(service, "GET", "/health/live")).status, 200);
    assert.equal((await call(service, "GET", "/openapi.json")).status, 200);
    assert.equal((await call(service, "PUT", "/chatbot-agent/invoke", {})).status, 405);
    for (let i = 0; i < 25; i++) assert.equal((await call(service, "GET", `/no/such/path/${i}/${Math.random()}`)).status, 404);

    assert.equal(await value(metrics, "agenthost_http_requests_total", { route: "/{agent_id}/invoke", method: "POST", status: "200" }), 1);
    // No route is PUT: its method label is "other" (see the next test).
    assert.equal(await value(metrics, "agenthost_http_requests_total", { route: "/{agent_id}/invoke", method: "other", status: "405" }), 1);
    assert.ok((await value(metrics, "agenthost_http_requests_total", { route: "/invoke", method: "POST", status: "200" })) >= 1);
    assert.equal(await value(metrics, "agenthost_http_requests_total", { route: "/health/live", method: "GET", status: "200" }), 1);
    assert.equal(await value(metrics, "agenthost_http_requests_total", { route: "unmatched", method: "GET", status: "404" }), 25);

    // Every route label is a documented path, a fixed route of the docs, or one of two fixed names.
    const documented = new Set(Object.keys((buildOpenApiDocument() as { paths: Record<string, unknown> }).paths));
    const allowed = new Set([...documented, "/openapi.json", "/docs", "/docs/init.js", "/docs/assets", "/favicon.ico", "unmatched", "preflight"]);
    const routes = new Set((await samples(metrics, "agenthost_http_requests_total")).map((s) => String(s.labels.route)));
    for (const route of routes) assert.ok(allowed.has(route), `route label ${route}`);
    assert.ok(routes.size <= allowed.size);
  });

  test("methods no route serves share the method label other; the parser refuses the rest before they are counted", async () => {
    const { metrics } = service.runtime;
    const served = ["GET", "HEAD", "POST", "PATCH", "DELETE", "OPTIONS"];
    const labelled = new Set([...served, "other"]);
    const methodLabels = async () => {
      const found = [
        ...(await samples(metrics, "agenthost_http_requests_total")),
        ...(await samples(metrics, "agenthost_http_request_duration_seconds_count")),
      ];
      return new Set(found.map((s) => String(s.labels.method)));
    };
    const count = async (method?: string) =>
      (await samples(metrics, "agenthost_http_requests_total"))
        .filter((s) => method === undefined || s.labels.method === method)
        .reduce((n, s) => n + s.value, 0);
    const send = async (method: string, path: string) => {
      const client = await RawClient.connect(service.url);
      try {
        client.write(`${method} ${path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${TEST_TOKEN}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
        return (await client.response()).status;
      } finally {
        client.destroy();
      }
    };

    // Every method Node's parser accepts that no route serves (CONNECT is answered by the server itself),
    // on an operation's path, a public path and an unknown one.
    const odd = http.METHODS.filter((method) => !served.includes(method) && method !== "CONNECT");
    assert.ok(odd.includes("PROPFIND") && odd.includes("PURGE") && odd.includes("M-SEARCH"), odd.join(" "));
    const paths = ["/chatbot-agent/invoke", "/health/live", "/no/such/path"];
    const [before, otherBefore] = [await count(), await count("other")];
    for (const method of odd) {
      for (const path of paths) {
        const status = await send(method, path);
        assert.ok(status === 404 || status === 405, `${method} ${path}: ${status}`);
      }
    }
    // Not methods to Node's parser: 400 before the app sees them.
    for (const method of ["FOO", "get", "Post", "PROPFIND2"]) assert.equal(await send(method, "/health/live"), 400, method);
    const sent = odd.length * paths.length;
    await waitFor(async () => (await count()) === before + sent, "every request the app answered counted");

    for (const method of await methodLabels()) assert.ok(labelled.has(method), `method label ${method}`);
    assert.equal(await count("other"), otherBefore + sent);
  });

  test("model names from outside stop at MODEL_LABEL_LIMIT distinct values; the rest count as other", async () => {
    const metrics = new ServiceMetrics();
    const observer = new ModelCallObserver(metrics);
    for (let i = 0; i < MODEL_LABEL_LIMIT + 30; i++) {
      const runId = `run-${i}`;
      const metadata = { agent_id: "a", ls_provider: i % 2 ? "openai" : "somewhere-else", ls_model_name: `model-${i}` };
      observer.handleChatModelStart({ lc: 1, type: "not_implemented", id: [] }, [], runId, undefined, undefined, undefined, metadata);
      observer.handleLLMEnd({ generations: [] }, runId);
    }
    const { values } = await metrics.modelCallDuration.get();
    const models = new Set(values.map((v) => v.labels.model));
    const providers = new Set(values.map((v) => v.labels.provider));
    assert.equal(models.size, MODEL_LABEL_LIMIT + 1);
    assert.ok(models.has("other"));
    assert.deepEqual([...providers].sort(), ["openai", "other"]);
  });
});

describe("requests refused before their route", () => {
  const USER_TOKEN = "ada-metrics-token";
  let service: RunningService;
  before(async () => {
    service = await startService({ AUTH_MODE: "token", AUTH_USERS: JSON.stringify({ ada: USER_TOKEN }), REQUEST_MAX_BYTES: "1024" });
  });
  after(() => service.close());

  /** agenthost_http_requests_total by route, method and status, read from the text /metrics serves. */
  async function exposed(): Promise<Map<string, number>> {
    const text = await service.runtime.metrics.registry.metrics();
    const counts = new Map<string, number>();
    for (const line of text.split("\n")) {
      const match = /^agenthost_http_requests_total\{(.*)\} (\d+)$/.exec(line);
      if (!match) continue;
      const labels = Object.fromEntries([...match[1]!.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1]!, m[2]!]));
      counts.set(`${labels.route} ${labels.method} ${labels.status}`, Number(match[2]));
    }
    return counts;
  }

  /** Send a request with a raw body; its status. */
  async function send(method: string, path: string, token: string | null, body?: string): Promise<number> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (token !== null) headers.authorization = `Bearer ${token}`;
    const response = await fetch(service.url + path, { method, headers, body });
    await response.arrayBuffer();
    return response.status;
  }

  test("401, 403, 422 (a body that is not JSON) and 413 on a known route carry its label; unknown paths, however many, share unmatched", async () => {
    const cases: Array<[method: string, path: string, token: string | null, body: string | undefined, status: number, series: string]> = [
      ["POST", "/invoke", null, '{"input":{"message":"hi"}}', 401, "/invoke POST 401"],
      ["POST", "/chatbot-agent/invoke", "wrong-token", '{"input":{"message":"hi"}}', 401, "/{agent_id}/invoke POST 401"],
      ["GET", "/threads/some-thread/runs?limit=5", null, undefined, 401, "/threads/{thread_id}/runs GET 401"],
      ["POST", "/invoke", USER_TOKEN, '{"input":{"message":"hi"}, "user_id": "bob"}', 403, "/invoke POST 403"],
      // A body that is not JSON is refused 422 by the body parser, before the route.
      ["POST", "/invoke", USER_TOKEN, '{"input": {"message": ', 422, "/invoke POST 422"],
      ["POST", "/cancel", USER_TOKEN, "{not json", 422, "/cancel POST 422"],
      ["POST", "/chatbot-agent/history/add_messages", USER_TOKEN, JSON.stringify({ thread_id: "t", messages: [{ type: "human", content: "x".repeat(2048) }] }), 413, "/{agent_id}/history/add_messages POST 413"],
      ["GET", "/favicon.ico", null, undefined, 204, "/favicon.ico GET 204"],
      ["GET", "/docs/assets/swagger-ui.css", null, undefined, 200, "/docs/assets GET 200"],
      ["GET", "/docs/assets/no-such-file.js", null, undefined, 404, "/docs/assets GET 404"],
    ];
    const before = await exposed();
    for (const [method, path, token, body, status, series] of cases) {
      assert.equal(await send(method, path, token, body), status, `${method} ${path}`);
      await waitFor(async () => (await exposed()).get(series) === (before.get(series) ?? 0) + 1, series);
    }

    // Hostile paths without a token: agent names and ids of every kind map onto the table's templates,
    // anything else onto unmatched.
    const hostile = Array.from({ length: 30 }, (_, i) => `${"%41".repeat(i)}x${Math.random().toString(36).slice(2)}`);
    const unmatchedBefore = (await exposed()).get("unmatched GET 401") ?? 0;
    const agentBefore = (await exposed()).get("/{agent_id}/invoke POST 401") ?? 0;
    for (const name of hostile) {
      assert.equal(await send("POST", `/${name}/invoke`, null, "{}"), 401);
      assert.equal(await send("GET", `/${name}/no/such/${name}`, null), 401);
    }
    await waitFor(async () => (await exposed()).get("unmatched GET 401") === unmatchedBefore + hostile.length, "the unknown paths counted");
    assert.equal((await exposed()).get("/{agent_id}/invoke POST 401"), agentBefore + hostile.length);

    const documented = new Set(Object.keys((buildOpenApiDocument() as { paths: Record<string, unknown> }).paths));
    const allowed = new Set([...documented, "/openapi.json", "/docs", "/docs/init.js", "/docs/assets", "/favicon.ico", "unmatched", "preflight"]);
    const routes = new Set([...(await exposed()).keys()].map((series) => series.split(" ")[0]!));
    for (const route of routes) assert.ok(allowed.has(route), `route label ${route}`);
  });
});

describe("CORS", () => {
  let service: RunningService;
  before(async () => {
    service = await startService({ CORS_ALLOW_ORIGINS: "https://app.example.com, http://localhost:3000/", REQUEST_MAX_CONCURRENT: "1" });
  });
  after(() => service.close());

  const preflight = (origin: string, path = "/invoke") =>
    fetch(service.url + path, {
      method: "OPTIONS",
      headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "authorization, content-type" },
    });

  test("a preflight from an allowed origin is answered before authentication", async () => {
    const res = await preflight("https://app.example.com", "/chatbot-agent/stream");
    assert.equal(res.status, 204);
    assert.equal(res.headers.get("access-control-allow-origin"), "https://app.example.com");
    assert.match(res.headers.get("access-control-allow-methods") ?? "", /POST/);
    assert.match(res.headers.get("access-control-allow-headers") ?? "", /Authorization/i);
    assert.match(res.headers.get("access-control-allow-headers") ?? "", /Content-Type/i);
    assert.match(res.headers.get("access-control-allow-headers") ?? "", /X-Api-Key/i, "LangGraph's SDKs send their key as x-api-key");
    assert.match(res.headers.get("vary") ?? "", /Origin/);
    assert.ok(res.headers.get("x-request-id"));
    // Listed with a trailing slash, matched without.
    assert.equal((await preflight("http://localhost:3000")).status, 204);
  });

  test("a preflight is answered even when the worker is full (before admission)", async () => {
    const { admission } = service.runtime;
    const release = await admission.acquire();
    assert.ok(release, "the one slot was free");
    try {
      assert.equal((await call(service, "POST", "/invoke", { input: { message: "x" } })).status, 503);
      assert.equal((await preflight("https://app.example.com")).status, 204);
    } finally {
      release();
    }
  });

  test("answers to an allowed origin expose Retry-After, X-Request-Id, X-Run-Id and the Platform API's run and page headers, errors included", async () => {
    const ok = await fetch(`${service.url}/invoke`, {
      method: "POST",
      headers: { origin: "https://app.example.com", authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ input: { message: "hi" } }),
    });
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get("access-control-allow-origin"), "https://app.example.com");
    const exposed = (ok.headers.get("access-control-expose-headers") ?? "").toLowerCase().split(/,\s*/);
    assert.deepEqual(exposed.sort(), ["content-location", "location", "retry-after", "x-pagination-next", "x-pagination-total", "x-request-id", "x-run-id"]);
    const refused = await fetch(`${service.url}/invoke`, { method: "POST", headers: { origin: "https://app.example.com" } });
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get("access-control-allow-origin"), "https://app.example.com");
  });

  test("another origin gets no CORS headers: its preflight is refused like any unauthenticated request", async () => {
    const res = await preflight("https://evil.example.com");
    assert.equal(res.status, 401);
    assert.equal(res.headers.get("access-control-allow-origin"), null);
  });
});

test("without CORS_ALLOW_ORIGINS no answer carries CORS headers", async () => {
  const service = await startService();
  try {
    const res = await fetch(`${service.url}/invoke`, {
      method: "OPTIONS",
      headers: { origin: "https://app.example.com", "access-control-request-method": "POST" },
    });
    assert.equal(res.status, 401);
    assert.equal(res.headers.get("access-control-allow-origin"), null);
  } finally {
    await service.close();
  }
});

test("CORS_ALLOW_ORIGINS refuses what is not an origin", async () => {
  const { loadConfig } = await import("../../src/config/load.ts");
  assert.throws(() => loadConfig({ USE_FAKE_MODEL: "true", AUTH_SECRET: "s", CORS_ALLOW_ORIGINS: "https://ok.example.com,not an origin" }), /CORS_ALLOW_ORIGINS/);
  assert.deepEqual(loadConfig({ USE_FAKE_MODEL: "true", AUTH_SECRET: "s", CORS_ALLOW_ORIGINS: "*" }).CORS_ALLOW_ORIGINS, ["*"]);
});
