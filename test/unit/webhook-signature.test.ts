// Completion webhooks' signature, payload and backoff (src/background/webhook-delivery.ts).
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { test } from "node:test";
import { retryDelayMs, signWebhook, verifyWebhookSignature, webhookBody, webhookPayload } from "../../src/background/webhook-delivery.ts";
import type { WireRun } from "../../src/platform/platform-runs.ts";

const SECRET = "a-webhook-signing-secret-of-32-chars!";
const BODY = '{"run_id":"r1","status":"success"}';
const T = 1_700_000_000;

test("the signature is t=<unix seconds>,v1=<hex HMAC-SHA256 of `<t>.<body bytes>`>", () => {
  const expected = createHmac("sha256", SECRET).update(`${T}.${BODY}`).digest("hex");
  assert.equal(signWebhook(SECRET, BODY, T), `t=${T},v1=${expected}`);
  assert.equal(signWebhook(SECRET, Buffer.from(BODY), T), `t=${T},v1=${expected}`, "bytes and string agree");
});

test("a receiver verifies the exact bytes, the secret and the timestamp's age", () => {
  const header = signWebhook(SECRET, BODY, T);
  assert.equal(verifyWebhookSignature(SECRET, header, BODY, { now: T }), true);
  assert.equal(verifyWebhookSignature(SECRET, header, BODY, { now: T + 300 }), true, "within the tolerance");
  assert.equal(verifyWebhookSignature(SECRET, header, BODY, { now: T + 301 }), false, "a replay after the tolerance");
  assert.equal(verifyWebhookSignature(SECRET, header, BODY, { now: T - 301 }), false, "from the future");
  assert.equal(verifyWebhookSignature(SECRET, header, `${BODY} `, { now: T }), false, "one byte more");
  assert.equal(verifyWebhookSignature(SECRET, header, BODY.replace("success", "error"), { now: T }), false, "a changed body");
  assert.equal(verifyWebhookSignature(`${SECRET}x`, header, BODY, { now: T }), false, "another secret");
  assert.equal(verifyWebhookSignature(SECRET, header.replace(`t=${T}`, `t=${T + 1}`), BODY, { now: T }), false, "a moved timestamp");
  for (const bad of [undefined, "", "v1=abc", `t=${T}`, `t=${T},v1=zz`, `t=x,v1=${"0".repeat(64)}`]) {
    assert.equal(verifyWebhookSignature(SECRET, bad, BODY, { now: T }), false, String(bad));
  }
  // Several v1 entries (a secret's rotation): any may match.
  const rotated = `t=${T},v1=${"0".repeat(64)},${header.split(",")[1]}`;
  assert.equal(verifyWebhookSignature(SECRET, rotated, BODY, { now: T }), true);
});

const run = (status: WireRun["status"]): WireRun => ({
  run_id: "run-1",
  thread_id: "thread-1",
  assistant_id: "assistant-1",
  created_at: "2024-01-01T00:00:00.000Z",
  updated_at: "2024-01-01T00:00:05.000Z",
  status,
  metadata: { source: "test" },
  kwargs: { input: { messages: [] }, webhook: "https://hooks.example.com/?token=secret" },
  multitask_strategy: "reject",
});

test("the payload: the run's fields, its values or its error, never its kwargs", () => {
  const success = webhookPayload(run("success"), { values: { messages: [{ type: "ai", content: "hi" }] }, startedAt: Date.UTC(2024, 0, 1, 0, 0, 1), endedAt: Date.UTC(2024, 0, 1, 0, 0, 4) });
  assert.deepEqual(success, {
    run_id: "run-1",
    thread_id: "thread-1",
    assistant_id: "assistant-1",
    status: "success",
    created_at: "2024-01-01T00:00:00.000Z",
    updated_at: "2024-01-01T00:00:05.000Z",
    metadata: { source: "test" },
    multitask_strategy: "reject",
    run_started_at: "2024-01-01T00:00:01.000Z",
    run_ended_at: "2024-01-01T00:00:04.000Z",
    values: { messages: [{ type: "ai", content: "hi" }] },
  });
  const failed = webhookPayload(run("error"), { error: { error: "model_unavailable", message: "The model provider is unavailable.\n    at Object.<anonymous> (/app/x.js:1:1)" } });
  assert.deepEqual(failed.error, { error: "model_unavailable", message: "The model provider is unavailable." });
  assert.equal("values" in failed, false);
  assert.equal(JSON.stringify(failed).includes("token=secret"), false);
  assert.throws(() => webhookPayload(run("running"), {}), /final status/);
});

test("the body stays within WEBHOOK_MAX_BYTES: the values are left out first", () => {
  const payload = webhookPayload(run("success"), { values: { big: "x".repeat(5000) } });
  const sentAt = Date.UTC(2024, 0, 1, 0, 1);
  const whole = JSON.parse(webhookBody(payload, sentAt, 1024 * 1024)!.toString()) as Record<string, unknown>;
  assert.equal(whole.webhook_sent_at, "2024-01-01T00:01:00.000Z");
  assert.equal((whole.values as { big: string }).big.length, 5000);
  const lean = webhookBody(payload, sentAt, 2048)!;
  assert.ok(lean.length <= 2048);
  const parsed = JSON.parse(lean.toString()) as Record<string, unknown>;
  assert.equal(parsed.values_omitted, true);
  assert.equal("values" in parsed, false);
  assert.deepEqual(parsed.metadata, { source: "test" });
  const huge = webhookPayload({ ...run("success"), metadata: { big: "y".repeat(5000) } }, { values: {} });
  const leaner = JSON.parse(webhookBody(huge, sentAt, 2048)!.toString()) as Record<string, unknown>;
  assert.deepEqual(leaner.metadata, {});
  assert.equal(webhookBody(huge, sentAt, 10), undefined);
});

test("backoff doubles from WEBHOOK_RETRY_DELAY with jitter between half and all of it, capped; Retry-After lengthens it", () => {
  assert.equal(retryDelayMs(1, 2, () => 0), 500);
  assert.equal(retryDelayMs(1, 2, () => 0.999999), 999.9995);
  assert.equal(retryDelayMs(1, 3, () => 0), 1000);
  assert.equal(retryDelayMs(1, 5, () => 0), 4000);
  assert.equal(retryDelayMs(60, 20, () => 0.5), 225_000, "capped at five minutes, then jittered");
  assert.ok(retryDelayMs(60, 20, () => 0.999999) <= 5 * 60_000);
  assert.equal(retryDelayMs(1, 2, () => 0, 30_000), 30_000);
  assert.equal(retryDelayMs(1, 2, () => 0, 3_600_000), 5 * 60_000);
});
