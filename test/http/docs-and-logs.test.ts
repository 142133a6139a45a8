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

  test("one JSON log line per request, with no token or proof in any line", async () => {
    const before = service.logs.length;
    await call(service, "POST", "/invoke", { input: { message: "hi" } });
    await call(service, "POST", "/invoke", { input: { message: "hi" } }, "ann-private-token");
    await call(service, "POST", "/invoke", { input: { message: "hi" } }, "wrong-token");
    const lines = service.logs.slice(before).filter((l) => l.msg === "request");
    assert.equal(lines.length, 3);
    assert.deepEqual(lines.map((l) => l.status), [200, 200, 401]);
    assert.equal(lines[0]!.route, "{/:agentId}/invoke");
    assert.equal(typeof lines[0]!.request_id, "string");
    const all = JSON.stringify(service.logs);
    for (const secret of [TEST_TOKEN, "ann-private-token", "wrong-token"]) assert.ok(!all.includes(secret), secret);
  });
});
