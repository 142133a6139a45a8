// Feedback with no destination (OBSERVABILITY_BACKEND=empty): the answer stays 201 with its fields
// (`delivery: "skipped"`) and says in plain words that nothing was recorded; a worker running alone
// says so once at startup (test/cluster/feedback-destination.test.ts: the primary for its workers).
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";
import { call, startService } from "../helpers/service.ts";

const DETAIL = "No feedback destination is configured (OBSERVABILITY_BACKEND); this feedback was not recorded.";
const isWarning = (line: Record<string, unknown>) => line.setting === "OBSERVABILITY_BACKEND" && /^feedback is not recorded/.test(String(line.msg));

test("OBSERVABILITY_BACKEND=empty: 201, delivery skipped, and a detail saying the feedback was not recorded", async () => {
  const service = await startService();
  try {
    const run_id = randomUUID();
    for (const path of ["/feedback", "/chatbot-agent/feedback"]) {
      const res = await call(service, "POST", path, { run_id, key: "thumbs", score: 1, comment: "useful" });
      assert.equal(res.status, 201);
      const body = (await res.json()) as Record<string, unknown>;
      assert.deepEqual(Object.keys(body).sort(), ["delivery", "detail", "feedback_id", "key", "run_id"]);
      assert.equal(body.delivery, "skipped");
      assert.equal(body.detail, DETAIL);
      assert.equal(body.run_id, run_id);
      assert.equal(body.key, "thumbs");
    }
    // A worker running alone warns once at startup, not once per feedback.
    const warnings = service.logs.filter(isWarning);
    assert.equal(warnings.length, 1, JSON.stringify(service.logs));
    assert.equal(warnings[0]!.level, 40);
  } finally {
    await service.close();
  }
});

test("the OpenAPI document describes detail as an optional field of FeedbackResponse", async () => {
  const service = await startService();
  try {
    const document = (await (await call(service, "GET", "/openapi.json")).json()) as {
      components: { schemas: Record<string, { properties: Record<string, { type?: string }>; required?: string[] }> };
    };
    const schema = document.components.schemas.FeedbackResponse!;
    assert.equal(schema.properties.detail?.type, "string");
    assert.ok(!(schema.required ?? []).includes("detail"));
    assert.ok((schema.required ?? []).includes("delivery"));
  } finally {
    await service.close();
  }
});

test("a configured destination: no warning at startup", async () => {
  // Langfuse is not contacted at startup: an address nothing listens on is enough here.
  const service = await startService({ OBSERVABILITY_BACKEND: "langfuse", LANGFUSE_PUBLIC_KEY: "pk-lf-test", LANGFUSE_SECRET_KEY: "sk-lf-test", LANGFUSE_BASE_URL: "http://127.0.0.1:1" });
  try {
    assert.ok(service.logs.length > 0, "its startup lines are captured");
    assert.deepEqual(service.logs.filter(isWarning), []);
  } finally {
    await service.close();
  }
});
