// Completion webhooks delivered over real HTTP on loopback (src/background/webhook-delivery.ts): a
// receiver on 127.0.0.1 (allowed by WEBHOOK_ALLOWED_HOSTS) verifies the signature; retries on 5xx,
// timeouts and refused connections; no retry on other 4xx or redirects; private addresses refused
// before anything is sent, including a name resolving to one; close() ends pending retries.
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { after, before, test } from "node:test";
import {
  SIGNATURE_HEADER,
  verifyWebhookSignature,
  WEBHOOK_ID_HEADER,
  WebhookSender,
  webhookPayload,
  type WebhookOutcome,
  type WebhookSettings,
} from "../../src/background/webhook-delivery.ts";
import type { WebhookResolver } from "../../src/background/webhook-target.ts";
import { createLogger } from "../../src/observability/logger.ts";
import type { WireRun } from "../../src/platform/platform-runs.ts";
import { waitFor } from "../helpers/raw-http.ts";

const SECRET = "a-webhook-signing-secret-of-32-chars!";

interface Received {
  readonly path: string;
  readonly headers: IncomingMessage["headers"];
  readonly body: Buffer;
  /** Receiver's clock when it arrived (unix seconds). */
  readonly at: number;
}

/** What the receiver answers for one request: a status, or `hang` (never answers). */
type Answer = number | "hang";

/** A webhook receiver on 127.0.0.1 that records each request and answers from a script per path. */
class Receiver {
  readonly received: Received[] = [];
  private readonly scripts = new Map<string, Answer[]>();
  private readonly hanging = new Set<ServerResponse>();
  private readonly server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const path = req.url ?? "/";
      this.received.push({ path, headers: req.headers, body: Buffer.concat(chunks), at: Math.floor(Date.now() / 1000) });
      const answer = this.scripts.get(path.split("?")[0]!)?.shift() ?? 200;
      if (answer === "hang") {
        this.hanging.add(res);
        return;
      }
      if (answer >= 300 && answer < 400) res.setHeader("location", "http://127.0.0.1:9/elsewhere");
      res.writeHead(answer, { "content-type": "text/plain" }).end("x".repeat(100_000));
    });
  });
  port = 0;

  async start(): Promise<void> {
    this.server.listen(0, "127.0.0.1");
    await once(this.server, "listening");
    this.port = (this.server.address() as AddressInfo).port;
  }

  script(path: string, answers: Answer[]): void {
    this.scripts.set(path, answers);
  }

  at(path: string): Received[] {
    return this.received.filter((r) => r.path.split("?")[0] === path);
  }

  async stop(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    this.server.close();
    await once(this.server, "close");
  }
}

const receiver = new Receiver();
before(() => receiver.start());
after(() => receiver.stop());

const logLines: Record<string, unknown>[] = [];
const sink = new Writable({
  write(chunk: Buffer, _encoding, done) {
    for (const line of chunk.toString().split("\n")) if (line.trim()) logLines.push(JSON.parse(line) as Record<string, unknown>);
    done();
  },
});
const logger = createLogger({ LOG_LEVEL: "debug" }, sink);

const settings = (overrides: Partial<WebhookSettings> = {}): WebhookSettings => ({
  WEBHOOK_SIGNING_SECRET: SECRET,
  WEBHOOK_ALLOWED_HOSTS: ["127.0.0.1/32"],
  WEBHOOK_MAX_ATTEMPTS: 5,
  WEBHOOK_TIMEOUT: 5,
  WEBHOOK_RETRY_DELAY: 0.01,
  WEBHOOK_MAX_BYTES: 1024 * 1024,
  WEBHOOK_MAX_PENDING: 100,
  ...overrides,
});

/** A sender whose outcomes a test can wait for, by run id. */
function sender(overrides: Partial<WebhookSettings> = {}, resolve?: WebhookResolver) {
  const outcomes = new Map<string, WebhookOutcome>();
  const webhooks = new WebhookSender({ settings: settings(overrides), logger, resolve, onOutcome: (o) => outcomes.set(o.runId, o) });
  const outcome = async (runId: string): Promise<WebhookOutcome> => {
    await waitFor(() => outcomes.has(runId), `the webhook of ${runId} to end`);
    return outcomes.get(runId)!;
  };
  return { webhooks, outcome };
}

const wireRun = (runId: string, status: WireRun["status"] = "success"): WireRun => ({
  run_id: runId,
  thread_id: "thread-1",
  assistant_id: "assistant-1",
  created_at: "2024-01-01T00:00:00.000Z",
  updated_at: "2024-01-01T00:00:05.000Z",
  status,
  metadata: {},
  kwargs: {},
  multitask_strategy: "reject",
});

const url = (path: string) => `http://127.0.0.1:${receiver.port}${path}`;

test("a delivery: the run as JSON, signed over the exact bytes, verified by the receiver", async () => {
  const { webhooks, outcome } = sender();
  const payload = webhookPayload(wireRun("run-ok"), { values: { messages: [{ type: "ai", content: "done" }] } });
  webhooks.send(url("/ok?token=s3cr3t"), payload);
  assert.deepEqual(await outcome("run-ok"), { outcome: "delivered", deliveryId: (await outcome("run-ok")).deliveryId, runId: "run-ok", attempts: 1, statusCode: 200, reason: undefined });
  const [request] = receiver.at("/ok");
  assert.ok(request);
  assert.equal(request.path, "/ok?token=s3cr3t");
  assert.equal(request.headers["content-type"], "application/json");
  assert.match(String(request.headers[SIGNATURE_HEADER]), /^t=\d+,v1=[0-9a-f]{64}$/);
  assert.equal(verifyWebhookSignature(SECRET, String(request.headers[SIGNATURE_HEADER]), request.body, { now: request.at }), true);
  assert.equal(verifyWebhookSignature("another-secret-of-at-least-32-characters", String(request.headers[SIGNATURE_HEADER]), request.body), false);
  const body = JSON.parse(request.body.toString()) as Record<string, unknown>;
  assert.equal(body.run_id, "run-ok");
  assert.equal(body.thread_id, "thread-1");
  assert.equal(body.assistant_id, "assistant-1");
  assert.equal(body.status, "success");
  assert.deepEqual(body.values, { messages: [{ type: "ai", content: "done" }] });
  assert.match(String(body.webhook_sent_at), /^\d{4}-\d\d-\d\dT/);
  assert.equal(request.headers[WEBHOOK_ID_HEADER], (await outcome("run-ok")).deliveryId);
  // The outcome's log line names the origin, never the path or the query.
  const line = logLines.find((l) => l.run_id === "run-ok" && l.msg === "webhook delivered");
  assert.ok(line);
  assert.equal(line.webhook, `http://127.0.0.1:${receiver.port}`);
  assert.equal(JSON.stringify(logLines).includes("s3cr3t"), false);
  assert.equal(JSON.stringify(logLines).includes(SECRET), false);
  await webhooks.close();
});

test("500 twice, then 200: delivered on the third attempt, the same body and id each time, each signed afresh", async () => {
  receiver.script("/flaky", [500, 500, 200]);
  const { webhooks, outcome } = sender();
  webhooks.send(url("/flaky"), webhookPayload(wireRun("run-flaky", "error"), { error: { error: "model_unavailable", message: "The model provider is unavailable." } }));
  const ended = await outcome("run-flaky");
  assert.equal(ended.outcome, "delivered");
  assert.equal(ended.attempts, 3);
  const requests = receiver.at("/flaky");
  assert.equal(requests.length, 3);
  for (const request of requests) {
    assert.equal(verifyWebhookSignature(SECRET, String(request.headers[SIGNATURE_HEADER]), request.body, { now: request.at }), true);
    assert.equal(request.headers[WEBHOOK_ID_HEADER], ended.deliveryId);
    assert.deepEqual(request.body, requests[0]!.body);
  }
  const body = JSON.parse(requests[0]!.body.toString()) as Record<string, unknown>;
  assert.deepEqual(body.error, { error: "model_unavailable", message: "The model provider is unavailable." });
  assert.equal(body.status, "error");
  assert.equal(logLines.filter((l) => l.run_id === "run-flaky" && l.msg === "webhook attempt failed; retrying").length, 2);
  assert.equal(webhooks.pending, 0);
  await webhooks.close();
});

test("a 4xx other than 429 and a redirect are not retried; 429 and 503 are, up to WEBHOOK_MAX_ATTEMPTS", async () => {
  receiver.script("/gone", [410]);
  receiver.script("/moved", [302]);
  receiver.script("/busy", [429, 503, 503, 503]);
  const { webhooks, outcome } = sender({ WEBHOOK_MAX_ATTEMPTS: 3 });
  webhooks.send(url("/gone"), webhookPayload(wireRun("run-gone"), {}));
  webhooks.send(url("/moved"), webhookPayload(wireRun("run-moved"), {}));
  webhooks.send(url("/busy"), webhookPayload(wireRun("run-busy"), {}));
  assert.deepEqual(await outcome("run-gone"), { outcome: "failed", deliveryId: (await outcome("run-gone")).deliveryId, runId: "run-gone", attempts: 1, statusCode: 410, reason: "answered 410" });
  const moved = await outcome("run-moved");
  assert.equal(moved.outcome, "failed");
  assert.equal(moved.attempts, 1);
  assert.match(moved.reason ?? "", /redirects are not followed/);
  const busy = await outcome("run-busy");
  assert.equal(busy.outcome, "failed");
  assert.equal(busy.attempts, 3);
  assert.equal(busy.statusCode, 503);
  assert.match(busy.reason ?? "", /on every attempt/);
  assert.equal(receiver.at("/gone").length, 1);
  assert.equal(receiver.at("/moved").length, 1);
  assert.equal(receiver.at("/busy").length, 3);
  assert.equal(receiver.at("/elsewhere").length, 0);
  await webhooks.close();
});

test("an attempt that times out is retried; a refused connection too", async () => {
  receiver.script("/slow", ["hang", 200]);
  const { webhooks, outcome } = sender({ WEBHOOK_TIMEOUT: 0.3 });
  webhooks.send(url("/slow"), webhookPayload(wireRun("run-slow"), {}));
  const slow = await outcome("run-slow");
  assert.equal(slow.outcome, "delivered");
  assert.equal(slow.attempts, 2);
  const timedOut = logLines.find((l) => l.run_id === "run-slow" && l.msg === "webhook attempt failed; retrying");
  assert.match(String(timedOut?.reason), /timeout|TIMEOUT/i);

  // A port nothing listens on (the receiver's own, once closed).
  const closed = createServer();
  closed.listen(0, "127.0.0.1");
  await once(closed, "listening");
  const port = (closed.address() as AddressInfo).port;
  closed.close();
  await once(closed, "close");
  const { webhooks: second, outcome: secondOutcome } = sender({ WEBHOOK_MAX_ATTEMPTS: 2 });
  second.send(`http://127.0.0.1:${port}/nobody`, webhookPayload(wireRun("run-nobody"), {}));
  const nobody = await secondOutcome("run-nobody");
  assert.equal(nobody.outcome, "failed");
  assert.equal(nobody.attempts, 2);
  assert.match(nobody.reason ?? "", /ECONNREFUSED/);
  await Promise.all([webhooks.close(), second.close()]);
});

test("a private address is refused before anything is sent: a literal, or a name resolving to one", async () => {
  const names: WebhookResolver = async (hostname) => {
    if (hostname === "receiver.test") return [{ address: "127.0.0.1", family: 4 }];
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
  };
  const { webhooks, outcome } = sender({ WEBHOOK_ALLOWED_HOSTS: [] }, names);
  webhooks.send(url("/private"), webhookPayload(wireRun("run-literal"), {}));
  webhooks.send(`http://receiver.test:${receiver.port}/private`, webhookPayload(wireRun("run-name"), {}));
  webhooks.send(`http://[::ffff:127.0.0.1]:${receiver.port}/private`, webhookPayload(wireRun("run-mapped"), {}));
  const literal = await outcome("run-literal");
  assert.equal(literal.outcome, "refused");
  assert.equal(literal.attempts, 0);
  assert.match(literal.reason ?? "", /loopback address/);
  const name = await outcome("run-name");
  assert.equal(name.outcome, "refused");
  assert.equal(name.attempts, 1, "refused at its first attempt's address check, not retried");
  assert.match(name.reason ?? "", /receiver\.test resolves to a loopback address \(127\.0\.0\.1\)/);
  assert.equal((await outcome("run-mapped")).outcome, "refused");
  assert.equal(receiver.at("/private").length, 0);
  await webhooks.close();

  // Allowed by network, the same name is reached through the connection's own checked lookup (the
  // system resolver does not know receiver.test).
  const { webhooks: allowed, outcome: allowedOutcome } = sender({ WEBHOOK_ALLOWED_HOSTS: ["127.0.0.0/8"] }, names);
  allowed.send(`http://receiver.test:${receiver.port}/named`, webhookPayload(wireRun("run-named"), {}));
  assert.equal((await allowedOutcome("run-named")).outcome, "delivered");
  assert.equal(receiver.at("/named")[0]?.headers.host, `receiver.test:${receiver.port}`);
  await allowed.close();
});

test("DNS rebinding: a name that passed the check but resolves to loopback for the connection is not connected to", async () => {
  // Every other answer is loopback: the attempt's own check sees a public address, the
  // connection's lookup sees 127.0.0.1 and refuses it.
  let calls = 0;
  const rebinding: WebhookResolver = async () => (++calls % 2 === 1 ? [{ address: "93.184.216.34", family: 4 }] : [{ address: "127.0.0.1", family: 4 }]);
  const { webhooks, outcome } = sender({ WEBHOOK_ALLOWED_HOSTS: [], WEBHOOK_MAX_ATTEMPTS: 2 }, rebinding);
  webhooks.send(`http://rebind.test:${receiver.port}/rebind`, webhookPayload(wireRun("run-rebind"), {}));
  const rebind = await outcome("run-rebind");
  assert.equal(rebind.outcome, "refused");
  assert.equal(rebind.attempts, 1);
  assert.match(rebind.reason ?? "", /rebind\.test resolves to a loopback address/);
  assert.equal(calls, 2, "checked before the attempt, and again by the connection");
  assert.equal(receiver.at("/rebind").length, 0);
  await webhooks.close();
});

test("close() ends deliveries waiting to retry; a send after close is cancelled", async () => {
  receiver.script("/down", [500, 500, 500]);
  const { webhooks, outcome } = sender({ WEBHOOK_RETRY_DELAY: 60 });
  webhooks.send(url("/down"), webhookPayload(wireRun("run-down"), {}));
  await waitFor(() => logLines.some((l) => l.run_id === "run-down" && l.msg === "webhook attempt failed; retrying"), "the first attempt to fail");
  assert.equal(webhooks.pending, 1);
  await webhooks.close();
  const down = await outcome("run-down");
  assert.equal(down.outcome, "cancelled");
  assert.equal(down.attempts, 1);
  assert.equal(webhooks.pending, 0);
  webhooks.send(url("/down"), webhookPayload(wireRun("run-late"), {}));
  assert.equal((await outcome("run-late")).outcome, "cancelled");
  assert.equal(receiver.at("/down").length, 1);
});

test("bounded: beyond WEBHOOK_MAX_PENDING a delivery is dropped; a body past WEBHOOK_MAX_BYTES goes without its values", async () => {
  receiver.script("/held", ["hang"]);
  const { webhooks, outcome } = sender({ WEBHOOK_MAX_PENDING: 1, WEBHOOK_MAX_BYTES: 2048, WEBHOOK_TIMEOUT: 30 });
  webhooks.send(url("/held"), webhookPayload(wireRun("run-held"), {}));
  webhooks.send(url("/extra"), webhookPayload(wireRun("run-extra"), {}));
  const extra = await outcome("run-extra");
  assert.equal(extra.outcome, "dropped");
  assert.match(extra.reason ?? "", /WEBHOOK_MAX_PENDING/);
  await waitFor(() => receiver.at("/held").length === 1, "the held request to arrive");
  await webhooks.close();
  assert.equal((await outcome("run-held")).outcome, "cancelled");

  const { webhooks: small, outcome: smallOutcome } = sender({ WEBHOOK_MAX_BYTES: 2048 });
  small.send(url("/big"), webhookPayload(wireRun("run-big"), { values: { text: "z".repeat(10_000) } }));
  assert.equal((await smallOutcome("run-big")).outcome, "delivered");
  const big = receiver.at("/big")[0]!;
  assert.ok(big.body.length <= 2048);
  assert.equal((JSON.parse(big.body.toString()) as { values_omitted?: boolean }).values_omitted, true);
  await small.close();
});
