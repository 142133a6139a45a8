// Optional integrations load only when configured: a service with none of them (the fake model, no
// tracing, no feedback queue) starts and serves turns while resolution hooks, inherited by every
// worker through NODE_OPTIONS, refuse any module of a provider SDK, Langfuse, the OpenTelemetry SDK
// or exporter, or BullMQ. A module known to load one shows the hooks do refuse it.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";
import { pathToFileURL } from "node:url";
import { ROOT, request, startCluster } from "./cluster-helper.ts";

const FORBID = new URL("../helpers/forbid-optional.mjs", import.meta.url).href;
const FAKE = "This is a test response from the fake model.";

test("the hooks refuse a module that loads an optional integration", () => {
  for (const [module, integration] of [
    ["src/feedback/queue.ts", "bullmq"],
    ["src/models/sdk/openai.ts", "@langchain/openai"],
    ["src/observability/otel-tracing.ts", "@opentelemetry/"],
  ] as const) {
    const target = pathToFileURL(`${ROOT}/${module}`).href;
    const child = spawnSync(process.execPath, ["--import", "tsx", "--import", FORBID, "--input-type=module", "-e", `await import(${JSON.stringify(target)});`], {
      cwd: ROOT,
      encoding: "utf8",
      timeout: 60_000,
    });
    assert.notEqual(child.status, 0, `${module} loaded with the hooks on`);
    assert.ok(child.stderr.includes(`an optional integration was loaded: ${integration}`), child.stderr);
  }
});

test("a service that uses no optional integration starts and serves a turn without loading one", async () => {
  const service = await startCluster({ NODE_OPTIONS: `--import=${FORBID}`, WEB_CONCURRENCY: "1", AGENT_PATHS: "[]" });
  try {
    const invoked = await request(service.url, "POST", "/invoke", { input: { message: "Hello" }, thread_id: "plain" });
    assert.equal(invoked.status, 200, invoked.body);
    assert.equal(invoked.json().content, FAKE);
    const streamed = await request(service.url, "POST", "/stream", { input: { message: "Again" }, thread_id: "plain" });
    assert.equal(streamed.status, 200, streamed.body);
    assert.match(streamed.body, /data: \[DONE\]/);
    assert.doesNotMatch(service.stderr(), /optional integration/);
  } finally {
    assert.equal(await service.stop(), 0);
  }
});
