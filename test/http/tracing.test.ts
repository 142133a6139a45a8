// Issue 19: OpenTelemetry traces of a request, its run, the lock wait, checkpoint operations and
// model calls, exported over OTLP to a local receiver; W3C trace context in and out. Issue 29 (12):
// each OTLP protocol (http/protobuf, the default; http/json; grpc) reaches a receiver that decodes it.
import { spawn } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { storageKey } from "../../src/auth/storage-key.ts";
import { loadConfig } from "../../src/config/load.ts";
import { tracesExport } from "../../src/observability/load-tracing.ts";
import { FAKE_PROVIDER_KEY, PROVIDER_ERROR_TEXT, startFakeProvider, type FakeProvider } from "../fixtures/providers/fake-provider.ts";
import { startOtlpGrpcReceiver, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "../helpers/otlp-receiver.ts";
import { startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";
import { eventually, fakeLangfuse, otlpSpans, type FakeBackend } from "../integration/observability-fakes.ts";

const SERVER = 2;
const CLIENT = 3;

function traceparent(): { header: string; traceId: string; parentId: string } {
  const traceId = randomBytes(16).toString("hex");
  const parentId = randomBytes(8).toString("hex");
  return { header: `00-${traceId}-${parentId}-01`, traceId, parentId };
}

function post(service: RunningService, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(service.url + path, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

/** Flush the service's spans until the trace holds a span named `last` (the request's, which ends last). */
async function traceOf(service: RunningService, receiver: OtlpReceiver, traceId: string, last: string): Promise<ReceivedSpan[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const spans = receiver.spans.filter((s) => s.traceId === traceId);
    if (spans.some((s) => s.name === last)) return spans;
    assert.ok(Date.now() < deadline, `no span "${last}" in trace ${traceId}: ${spans.map((s) => s.name).join(", ")}`);
    const exported = receiver.nextExport();
    await service.runtime.tracing!.flush();
    if (receiver.spans.length === 0 || !receiver.spans.some((s) => s.traceId === traceId && s.name === last)) {
      await Promise.race([exported, new Promise((resolve) => setImmediate(resolve))]);
    }
  }
}

function one(spans: ReceivedSpan[], name: string): ReceivedSpan {
  const found = spans.filter((s) => s.name === name);
  assert.equal(found.length, 1, `one span "${name}" among ${spans.map((s) => s.name).join(", ")}`);
  return found[0]!;
}

describe("OpenTelemetry traces", () => {
  let receiver: OtlpReceiver;
  let service: RunningService;
  before(async () => {
    receiver = await startOtlpReceiver();
    service = await startService({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_HEADERS: "x-tenant=agenthost%20tests",
      OTEL_SERVICE_NAME: "agenthost-under-test",
      MEMORY_BACKEND: "memory",
    });
  });
  after(async () => {
    await service.close();
    await receiver.close();
  });

  test("an invoke: request ← run ← lock wait, checkpoint operations and the model call, under the caller's trace", async () => {
    const parent = traceparent();
    const thread = randomUUID();
    const secret = `plums in the icebox ${randomUUID()}`;
    const res = await post(service, "/chatbot-agent/invoke", { input: { message: secret }, thread_id: thread, user_id: "ann" }, { traceparent: parent.header });
    assert.equal(res.status, 200);
    const answer = (await res.json()) as { run_id: string };

    const spans = await traceOf(service, receiver, parent.traceId, "POST /{agent_id}/invoke");
    const request = one(spans, "POST /{agent_id}/invoke");
    assert.equal(request.kind, SERVER);
    assert.equal(request.parentSpanId, parent.parentId, "the caller's span is the request's parent");
    assert.equal(request.attributes["http.route"], "/{agent_id}/invoke");
    assert.equal(request.attributes["http.response.status_code"], 200);
    assert.equal(request.attributes["agenthost.run_id"], answer.run_id);
    assert.equal(request.resource["service.name"], "agenthost-under-test");

    const run = one(spans, "invoke_agent chatbot-agent");
    assert.equal(run.parentSpanId, request.spanId);
    assert.equal(run.attributes["gen_ai.agent.name"], "chatbot-agent");
    assert.equal(run.attributes["agenthost.run_id"], answer.run_id);
    assert.equal(run.attributes["gen_ai.conversation.id"], thread);
    assert.equal(run.attributes["agenthost.outcome"], "ok");

    const lock = one(spans, "conversation_lock.acquire");
    assert.equal(lock.parentSpanId, run.spanId);
    assert.equal(lock.attributes["agenthost.lock.outcome"], "granted");

    const checkpoints = spans.filter((s) => s.name.startsWith("checkpoint "));
    assert.ok(checkpoints.some((s) => s.name === "checkpoint getTuple"), "the conversation was read");
    assert.ok(checkpoints.some((s) => s.name === "checkpoint put"), "the run's checkpoints were written");
    for (const span of checkpoints) {
      assert.equal(span.parentSpanId, run.spanId, span.name);
      assert.equal(span.attributes["db.system.name"], "memory");
    }

    const model = one(spans, "chat fake");
    assert.equal(model.kind, CLIENT);
    assert.equal(model.parentSpanId, run.spanId);
    assert.equal(model.attributes["gen_ai.provider.name"], "fake");
    assert.equal(model.attributes["gen_ai.request.model"], "fake");
    assert.ok(Number(model.attributes["gen_ai.usage.input_tokens"]) > 0);
    assert.ok(Number(model.attributes["gen_ai.usage.output_tokens"]) > 0);

    // Never the message text nor the storage key; the exporter's headers come from the variable.
    const exported = receiver.bodies.join("\n");
    assert.ok(!exported.includes(secret), "message text was exported");
    assert.ok(!exported.includes(storageKey("ann", "chatbot-agent", thread)), "the storage key was exported");
    assert.equal(receiver.lastHeaders?.["x-tenant"], "agenthost tests");
    // No protocol set: OTLP's default, binary protobuf over HTTP.
    assert.deepEqual([...new Set(receiver.protocols)], ["http/protobuf"]);

    // The request's log line names the trace.
    const line = service.logs.find((l) => l.msg === "request" && l.run_id === answer.run_id);
    assert.equal(line?.trace_id, parent.traceId);
  });

  test("a background run: a trace of its own, its run span linked to the request that accepted it", async () => {
    const parent = traceparent();
    const created = await post(service, "/threads", {});
    const thread = ((await created.json()) as { thread_id: string }).thread_id;
    const accepted = await post(service, `/threads/${thread}/runs`, { assistant_id: "chatbot-agent", input: { messages: [{ role: "user", content: "later" }] } }, { traceparent: parent.header });
    assert.equal(accepted.status, 200);
    const { run_id: runId } = (await accepted.json()) as { run_id: string };
    const requestSpans = await traceOf(service, receiver, parent.traceId, "POST /threads/{thread_id}/runs");
    const request = one(requestSpans, "POST /threads/{thread_id}/runs");
    assert.ok(!requestSpans.some((s) => s.name === "invoke_agent chatbot-agent"), "the run is not under the request");
    const deadline = Date.now() + 10_000;
    let run;
    while (!(run = receiver.spans.find((s) => s.name === "invoke_agent chatbot-agent" && s.attributes["agenthost.run_id"] === runId))) {
      assert.ok(Date.now() < deadline, "the background run's span was exported");
      const exported = receiver.nextExport();
      await service.runtime.tracing!.flush();
      await Promise.race([exported, new Promise((resolve) => setImmediate(resolve))]);
    }
    assert.notEqual(run.traceId, parent.traceId, "a trace of its own");
    assert.equal(run.parentSpanId, undefined);
    assert.deepEqual(run.links, [{ traceId: parent.traceId, spanId: request.spanId }]);
    assert.equal(run.attributes["agenthost.outcome"], "ok");
  });

  test("a token stream: the model call under the run carries its time to first token", async () => {
    const parent = traceparent();
    const res = await post(service, "/stream", { input: { message: "tell me more" }, stream_tokens: true }, { traceparent: parent.header });
    assert.equal(res.status, 200);
    await res.text();
    const spans = await traceOf(service, receiver, parent.traceId, "POST /stream");
    const request = one(spans, "POST /stream");
    const run = one(spans, "invoke_agent chatbot-agent");
    assert.equal(run.parentSpanId, request.spanId);
    assert.equal(run.attributes["agenthost.outcome"], "ok");
    const model = one(spans, "chat fake");
    assert.equal(model.parentSpanId, run.spanId, "the stream's graph runs under the run's span");
    assert.ok(model.events.includes("first_token"));
    assert.ok(Number(model.attributes["agenthost.time_to_first_token_ms"]) >= 0);
    for (const span of spans.filter((s) => s.name.startsWith("checkpoint "))) assert.equal(span.parentSpanId, run.spanId);
  });

  test("a refused request: its error_code on the request span, no run", async () => {
    const parent = traceparent();
    const res = await post(service, "/no-such-agent/invoke", { input: { message: "x" } }, { traceparent: parent.header });
    assert.equal(res.status, 404);
    const spans = await traceOf(service, receiver, parent.traceId, "POST /{agent_id}/invoke");
    assert.equal(spans.length, 1);
    assert.equal(spans[0]!.attributes["agenthost.error_code"], "unknown_agent");
  });

  test("without a traceparent the request starts a new trace", async () => {
    const res = await post(service, "/invoke", { input: { message: "hi" } });
    assert.equal(res.status, 200);
    const { run_id: runId } = (await res.json()) as { run_id: string };
    let request: ReceivedSpan | undefined;
    const deadline = Date.now() + 10_000;
    while (!(request = receiver.spans.find((s) => s.kind === SERVER && s.attributes["agenthost.run_id"] === runId))) {
      assert.ok(Date.now() < deadline, "the request span arrives");
      const exported = receiver.nextExport();
      await service.runtime.tracing!.flush();
      await Promise.race([exported, new Promise((resolve) => setImmediate(resolve))]);
    }
    assert.equal(request.parentSpanId, undefined);
    assert.match(request.traceId, /^[0-9a-f]{32}$/);
  });
});

describe("trace context sent to providers", () => {
  let receiver: OtlpReceiver;
  let provider: FakeProvider;
  let service: RunningService;
  before(async () => {
    receiver = await startOtlpReceiver();
    provider = await startFakeProvider();
    service = await startService({
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
      OPENAI_API_KEY: FAKE_PROVIDER_KEY,
      OPENAI_BASE_URL: `${provider.url}/v1`,
      // Gemini's SDK has no fetch option: its trace context goes through its customHeaders.
      MODEL_CONFIGS: JSON.stringify({ gemini: { provider: "google", model: "behave-ok", base_url: provider.url, api_key: FAKE_PROVIDER_KEY } }),
      LLM_HTTP_MAX_RETRIES: "0",
    });
  });
  after(async () => {
    await service.close();
    await provider.close();
    await receiver.close();
  });

  test("the provider's request carries the model call's span as its traceparent", async () => {
    const parent = traceparent();
    const res = await post(service, "/invoke", { input: { message: "Hello?" }, model_name: "behave-ok", model_provider: "openai" }, { traceparent: parent.header });
    assert.equal(res.status, 200, await res.clone().text());
    const spans = await traceOf(service, receiver, parent.traceId, "POST /invoke");
    const model = one(spans, "chat behave-ok");
    assert.equal(model.attributes["gen_ai.provider.name"], "openai");
    const sent = provider.requests.at(-1)!.headers.traceparent;
    assert.equal(sent, `00-${parent.traceId}-${model.spanId}-01`);
  });

  test("a Gemini call carries its span as its traceparent too, a fresh one for each call", async () => {
    const sentFor = async () => {
      const parent = traceparent();
      const res = await post(service, "/invoke", { input: { message: "Hello?" }, model_config_key: "gemini" }, { traceparent: parent.header });
      assert.equal(res.status, 200, await res.clone().text());
      const spans = await traceOf(service, receiver, parent.traceId, "POST /invoke");
      const model = one(spans, "chat behave-ok");
      assert.equal(model.attributes["gen_ai.provider.name"], "google");
      const request = provider.requests.at(-1)!;
      assert.match(request.path, /behave-ok:generateContent$/);
      assert.equal(request.headers.traceparent, `00-${parent.traceId}-${model.spanId}-01`);
      return request.headers.traceparent;
    };
    assert.notEqual(await sentFor(), await sentFor());
  });

  test("a failed model call: an error span with the error's type only, the run's outcome is the answer's error_code, the metrics count an error", async () => {
    const { metrics } = service.runtime;
    const labels = { agent: "chatbot-agent", provider: "openai", model: "behave-500", outcome: "error" };
    const errorsBefore = (await metrics.modelCallDuration.get()).values.find(
      (v) => v.metricName?.endsWith("_count") && Object.entries(labels).every(([k, want]) => v.labels[k as keyof typeof v.labels] === want),
    )?.value ?? 0;
    const parent = traceparent();
    const res = await post(service, "/invoke", { input: { message: "Hello?" }, model_name: "behave-500", model_provider: "openai" }, { traceparent: parent.header });
    const body = (await res.json()) as { error_code: string };
    assert.ok(res.status >= 500, String(res.status));
    const spans = await traceOf(service, receiver, parent.traceId, "POST /invoke");
    const model = one(spans, "chat behave-500");
    assert.equal(model.status.code, 2, "ERROR");
    assert.equal(typeof model.attributes["error.type"], "string");
    const run = one(spans, "invoke_agent chatbot-agent");
    assert.equal(run.attributes["agenthost.outcome"], body.error_code);
    assert.equal(one(spans, "POST /invoke").attributes["agenthost.error_code"], body.error_code);
    assert.ok(!receiver.bodies.join("\n").includes(PROVIDER_ERROR_TEXT), "the provider's error text was exported");
    const errorsAfter = (await metrics.modelCallDuration.get()).values.find(
      (v) => v.metricName?.endsWith("_count") && Object.entries(labels).every(([k, want]) => v.labels[k as keyof typeof v.labels] === want),
    )?.value;
    assert.equal(errorsAfter, errorsBefore + 1);
  });
});

describe("traces beside the Langfuse backend", () => {
  let receiver: OtlpReceiver;
  let langfuse: FakeBackend;
  let service: RunningService;
  before(async () => {
    receiver = await startOtlpReceiver();
    langfuse = await fakeLangfuse();
    service = await startService({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OBSERVABILITY_BACKEND: "langfuse",
      LANGFUSE_PUBLIC_KEY: "pk-lf-test",
      LANGFUSE_SECRET_KEY: "sk-lf-test",
      LANGFUSE_BASE_URL: langfuse.url,
    });
  });
  after(async () => {
    await service.close();
    await langfuse.close();
    await receiver.close();
  });

  test("one run reaches both: Langfuse's trace keyed by the run id, and the request's trace", async () => {
    const parent = traceparent();
    const res = await post(service, "/chatbot-agent/invoke", { input: { message: "hello" }, thread_id: randomUUID() }, { traceparent: parent.header });
    assert.equal(res.status, 200);
    const { run_id: runId } = (await res.json()) as { run_id: string };
    const spans = await traceOf(service, receiver, parent.traceId, "POST /{agent_id}/invoke");
    const run = one(spans, "invoke_agent chatbot-agent");
    assert.equal(one(spans, "chat fake").parentSpanId, run.spanId);
    await service.runtime.observability.flush();
    const langfuseTrace = runId.replace(/-/g, "");
    const observed = await eventually(() => {
      const found = otlpSpans(langfuse.to("/api/public/otel/v1/traces")).filter((s) => s.traceId === langfuseTrace);
      return found.some((s) => s.attributes["langfuse.observation.type"] === "generation") ? found : undefined;
    }, 10_000, "Langfuse's spans of the run");
    assert.ok(observed.every((s) => s.traceId !== parent.traceId), "Langfuse keeps its own trace");
    assert.ok(receiver.spans.every((s) => s.traceId !== langfuseTrace), "agenthost's traces stay out of Langfuse's");
  });
});

describe("each OTLP protocol reaches a receiver that decodes it", () => {
  const cases = [
    { protocol: "http/protobuf", receiver: startOtlpReceiver, env: { OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf" } },
    { protocol: "http/json", receiver: startOtlpReceiver, env: { OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" } },
    // The traces variable wins over the general one.
    { protocol: "grpc", receiver: startOtlpGrpcReceiver, env: { OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "grpc" } },
  ] as const;
  for (const { protocol, receiver: start, env } of cases) {
    test(`${protocol}: the request and its run arrive with their names and attributes`, async () => {
      const receiver = await start();
      const service = await startService({
        ...env,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_HEADERS: "x-tenant=agenthost%20tests",
        OTEL_SERVICE_NAME: `agenthost-over-${protocol}`,
        MEMORY_BACKEND: "memory",
      });
      try {
        const parent = traceparent();
        const thread = randomUUID();
        const res = await post(service, "/chatbot-agent/invoke", { input: { message: "Hello" }, thread_id: thread }, { traceparent: parent.header });
        assert.equal(res.status, 200);
        const { run_id: runId } = (await res.json()) as { run_id: string };
        const spans = await traceOf(service, receiver, parent.traceId, "POST /{agent_id}/invoke");

        const request = one(spans, "POST /{agent_id}/invoke");
        assert.equal(request.kind, SERVER);
        assert.equal(request.parentSpanId, parent.parentId);
        assert.equal(request.attributes["http.route"], "/{agent_id}/invoke");
        assert.equal(request.attributes["http.response.status_code"], 200);
        assert.equal(request.attributes["agenthost.run_id"], runId);
        assert.equal(request.resource["service.name"], `agenthost-over-${protocol}`);
        const run = one(spans, "invoke_agent chatbot-agent");
        assert.equal(run.parentSpanId, request.spanId);
        assert.equal(run.attributes["gen_ai.conversation.id"], thread);
        assert.equal(run.attributes["agenthost.outcome"], "ok");
        const model = one(spans, "chat fake");
        assert.equal(model.kind, CLIENT);
        assert.ok(Number(model.attributes["gen_ai.usage.output_tokens"]) > 0);

        assert.deepEqual([...new Set(receiver.protocols)], [protocol]);
        assert.equal(receiver.lastHeaders?.["x-tenant"], "agenthost tests", "OTEL_EXPORTER_OTLP_HEADERS as headers (gRPC: metadata)");
      } finally {
        await service.close();
        await receiver.close();
      }
    });
  }
});

test("only the chosen protocol's exporter is loaded", async () => {
  const root = path.resolve(import.meta.dirname, "../..");
  const packages = { "http/protobuf": "exporter-trace-otlp-proto", "http/json": "exporter-trace-otlp-http", grpc: "exporter-trace-otlp-grpc" };
  for (const protocol of Object.keys(packages) as Array<keyof typeof packages>) {
    // A fresh process builds the tracing, then lists the packages its CommonJS cache holds.
    const script = `
      import { createRequire } from "node:module";
      const { loadConfig } = await import(${JSON.stringify(`${root}/src/config/load.ts`)});
      const { createTracing } = await import(${JSON.stringify(`${root}/src/observability/load-tracing.ts`)});
      const env = { USE_FAKE_MODEL: "true", AUTH_SECRET: "s", OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_EXPORTER_OTLP_PROTOCOL: ${JSON.stringify(protocol)} };
      const tracing = await createTracing(loadConfig(env));
      const files = Object.keys(createRequire(import.meta.url).cache);
      await tracing.close();
      process.stdout.write(JSON.stringify(files));`;
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk));
    assert.equal(await new Promise<number | null>((resolve) => child.on("exit", resolve)), 0, stderr);
    const loaded = new Set((JSON.parse(stdout) as string[]).map((file) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file)?.[1]));
    for (const [other, name] of Object.entries(packages)) {
      assert.equal(loaded.has(`@opentelemetry/${name}`), other === protocol, `${protocol}: @opentelemetry/${name} ${other === protocol ? "not " : ""}loaded`);
    }
    assert.equal(loaded.has("@grpc/grpc-js"), protocol === "grpc", `${protocol}: @grpc/grpc-js`);
  }
});

test("the protocol and the endpoint follow the OTLP exporter specification", () => {
  const base = { USE_FAKE_MODEL: "true", AUTH_SECRET: "s" };
  const target = (env: Record<string, string>) => tracesExport(loadConfig({ ...base, ...env }));
  // No protocol set: http/protobuf; the general endpoint is a base URL.
  assert.deepEqual(target({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" }), { protocol: "http/protobuf", url: "http://collector:4318/v1/traces" });
  assert.deepEqual(target({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" }), { protocol: "http/json", url: "http://collector:4318/v1/traces" });
  // The traces variables win over the general ones; the traces endpoint is used as it is.
  assert.deepEqual(
    target({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:4318", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://b:4318/custom", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc", OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/protobuf" }),
    { protocol: "http/protobuf", url: "http://b:4318/custom" },
  );
  // gRPC: the endpoint names the collector and gets no path.
  assert.deepEqual(target({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4317", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }), { protocol: "grpc", url: "http://collector:4317" });
  assert.deepEqual(target({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://collector:4317", OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "grpc" }), { protocol: "grpc", url: "https://collector:4317" });
  // A protocol alone turns nothing on.
  assert.equal(target({ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }), undefined);
});

test("an unknown protocol is refused at startup in one line naming the variable and the choices", async () => {
  assert.throws(
    () => loadConfig({ USE_FAKE_MODEL: "true", AUTH_SECRET: "s", OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/thrift" }),
    { message: 'agenthost cannot start: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL must be http/protobuf, http/json or grpc, not "http/thrift"' },
  );
  const root = path.resolve(import.meta.dirname, "../..");
  const child = spawn(path.join(root, "bin/agenthost"), [], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", AGENTHOST_DOTENV: "off", USE_FAKE_MODEL: "true", AUTH_SECRET: "s", HOST: "127.0.0.1", PORT: "0", METRICS_PORT: "0", OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_EXPORTER_OTLP_PROTOCOL: "protobuf" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk));
  const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
  assert.equal(code, 2, stderr);
  assert.equal(stderr, 'agenthost cannot start: OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf, http/json or grpc, not "protobuf"\n');
});

test("a header gRPC cannot carry as metadata is refused at startup, naming its key only", async () => {
  await assert.rejects(
    startService({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4317", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc", OTEL_EXPORTER_OTLP_HEADERS: "x-team=caf%C3%A9" }),
    { message: 'agenthost cannot start: OTEL_EXPORTER_OTLP_HEADERS has "x-team", which gRPC cannot send as metadata (printable ASCII only)' },
  );
});

test("tracing is off unless an OTLP endpoint is set, and OTEL_SDK_DISABLED wins", async () => {
  const base = { USE_FAKE_MODEL: "true", AUTH_SECRET: "s" };
  assert.equal(tracesExport(loadConfig(base)), undefined);
  assert.equal(tracesExport(loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "true" })), undefined);
  const service = await startService();
  try {
    assert.equal(service.runtime.tracing, undefined);
  } finally {
    await service.close();
  }
});
