import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { invokeRequestSchema } from "../../src/contract/requests.ts";
import { call, startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";

describe("API reference and request logs", () => {
  let service: RunningService;
  before(async () => {
    service = await startService({ AUTH_USERS: JSON.stringify({ ann: "ann-private-token" }) });
  });
  after(() => service.close());

  test("/openapi.json is generated from the request schemas", async () => {
    const doc = (await (await fetch(`${service.url}/openapi.json`)).json()) as {
      openapi: string;
      paths: Record<string, Record<string, unknown>>;
      components: { schemas: Record<string, { required?: string[]; properties?: Record<string, unknown> }> };
    };
    assert.match(doc.openapi, /^3\./);
    for (const path of ["/{agent_id}/invoke", "/invoke", "/{agent_id}/stream", "/stream", "/{agent_id}/stream/jsonl", "/stream/jsonl", "/info", "/health/ready", "/health/live"]) {
      assert.ok(doc.paths[path], `missing ${path}`);
    }
    const invoke = doc.components.schemas.InvokeRequest!;
    assert.deepEqual(invoke.required, ["input"]);
    assert.deepEqual(Object.keys(invoke.properties!).sort(), Object.keys(invokeRequestSchema.shape).sort());
    assert.ok(doc.components.schemas.ChatMessage && doc.components.schemas.StreamEvent && doc.components.schemas.ContentBlock);
  });

  test("the document's schemas carry no $id (not allowed in OpenAPI 3.0) and every $ref resolves", async () => {
    const doc = (await (await fetch(`${service.url}/openapi.json`)).json()) as { components: { schemas: Record<string, unknown> } };
    const text = JSON.stringify(doc);
    assert.equal(text.includes('"$id"'), false);
    const refs = [...text.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]!);
    assert.ok(refs.length > 10);
    for (const ref of new Set(refs)) assert.ok(doc.components.schemas[ref], `unresolved $ref ${ref}`);
  });

  test("/docs serves the interactive page and its assets without a token", async () => {
    const page = await fetch(`${service.url}/docs`);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /swagger-ui-bundle\.js/);
    const asset = await fetch(`${service.url}/docs/assets/swagger-ui-bundle.js`);
    assert.equal(asset.status, 200);
    await asset.arrayBuffer();
  });

  test("GET / answers a pointer to /docs and /info without a token, holding no data", async () => {
    const root = await fetch(`${service.url}/`);
    assert.equal(root.status, 200);
    const body = (await root.json()) as Record<string, string>;
    assert.equal(body.docs, "/docs");
    assert.equal(body.info, "/info");
    assert.equal(body.openapi, "/openapi.json");
    assert.ok(!JSON.stringify(body).includes("chatbot-agent"), "no agent list");
    assert.equal((await fetch(`${service.url}/`, { method: "POST" })).status, 405);
  });

  test("every error a newcomer meets first has an error_code: 401, 403, 404 and 405", async () => {
    const cases: Array<[number, string, Response]> = [
      [401, "unauthenticated", await fetch(`${service.url}/info`)],
      [401, "unauthenticated", await fetch(`${service.url}/info`, { headers: { authorization: "Bearer wrong-token" } })],
      [403, "forbidden_user", await fetch(`${service.url}/invoke`, { method: "POST", headers: { authorization: "Bearer ann-private-token" }, body: JSON.stringify({ input: { message: "hi" }, user_id: "bob" }) })],
      [404, "unknown_agent", await fetch(`${service.url}/nobody/invoke`, { method: "POST", headers: { authorization: `Bearer ${TEST_TOKEN}` }, body: JSON.stringify({ input: { message: "hi" } }) })],
      [404, "not_found", await fetch(`${service.url}/no/such/path`, { headers: { authorization: `Bearer ${TEST_TOKEN}` } })],
      [405, "method_not_allowed", await fetch(`${service.url}/invoke`, { method: "PUT", headers: { authorization: `Bearer ${TEST_TOKEN}` } })],
    ];
    for (const [status, code, response] of cases) {
      assert.equal(response.status, status, `${status} ${code}`);
      const body = (await response.json()) as { detail?: unknown; error_code?: unknown };
      assert.equal(body.error_code, code);
      assert.equal(typeof body.detail, "string");
    }
  });

  test("one JSON log line per request, with no token or proof in any line", async () => {
    const before = service.logs.length;
    await call(service, "POST", "/invoke", { input: { message: "hi" } });
    await call(service, "POST", "/invoke", { input: { message: "hi" } }, "ann-private-token");
    await call(service, "POST", "/invoke", { input: { message: "hi" } }, "wrong-token");
    const lines = service.logs.slice(before).filter((l) => l.msg === "request");
    assert.equal(lines.length, 3);
    assert.deepEqual(lines.map((l) => l.status), [200, 200, 401]);
    assert.equal(lines[0]!.route, "/invoke");
    assert.equal(typeof lines[0]!.request_id, "string");
    assert.match(String(lines[0]!.run_id), /^[0-9a-f-]{36}$/, "a run's request line names the run");
    assert.equal(lines[0]!.error_code, undefined);
    assert.equal(lines[2]!.error_code, "unauthenticated", "an error answer's code is on its line");
    assert.equal(lines[2]!.run_id, undefined);
    assert.ok(lines.every((l) => !("trace_id" in l)), "no trace id while tracing is off");
    const all = JSON.stringify(service.logs);
    for (const secret of [TEST_TOKEN, "ann-private-token", "wrong-token"]) assert.ok(!all.includes(secret), secret);
  });
});
