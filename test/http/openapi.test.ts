// The OpenAPI document generated from the route table: it validates, names every operation, and
// lists exactly the operations the Express app serves.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import SwaggerParser from "@apidevtools/swagger-parser";
import { createApp } from "../../src/http/app.ts";
import { call, startService, type RunningService } from "../helpers/service.ts";

type Document = {
  servers?: unknown[];
  paths: Record<
    string,
    Record<string, { operationId?: string; security?: unknown[]; responses: Record<string, { description?: string; headers?: Record<string, unknown> }> }>
  >;
  components: { headers?: Record<string, unknown>; parameters?: Record<string, { in?: string }> };
};

/** Routes of the app, the routers mounted on it and the route table's middleware: "METHOD path" for each method served. */
function mountedOperations(stack: readonly unknown[], into = new Set<string>()): Set<string> {
  for (const layer of stack as Array<{ route?: { path: string; stack: Array<{ method?: string }> }; handle?: { stack?: unknown[]; served?: readonly string[] } }>) {
    if (layer.route) {
      for (const handler of layer.route.stack) if (handler.method) into.add(`${handler.method.toUpperCase()} ${layer.route.path}`);
    } else if (Array.isArray(layer.handle?.stack)) {
      mountedOperations(layer.handle.stack, into);
    } else if (layer.handle?.served) {
      for (const entry of layer.handle.served) into.add(entry);
    }
  }
  return into;
}

/** An Express path as the document writes it: `{/:agentId}/x` is both `/{agent_id}/x` and `/x`; `:run_id` is `{run_id}`. */
function documentedForms(entry: string): string[] {
  const [method, path] = entry.split(" ") as [string, string];
  if (!path.startsWith("{/:agentId}")) return [`${method} ${path.replace(/:([A-Za-z_]+)/g, "{$1}")}`];
  const rest = path.slice("{/:agentId}".length).replace(/:([A-Za-z_]+)/g, "{$1}");
  return [`${method} /{agent_id}${rest}`, `${method} ${rest}`];
}

describe("OpenAPI document", () => {
  let service: RunningService;
  let document: Document;
  before(async () => {
    service = await startService();
    document = (await (await fetch(`${service.url}/openapi.json`)).json()) as Document;
  });
  after(() => service.close());

  test("validates with swagger-parser", async () => {
    // The parser takes its own document type (from openapi-types); ours is plain JSON as served.
    await SwaggerParser.validate(structuredClone(document) as unknown as Awaited<ReturnType<typeof SwaggerParser.validate>>);
  });

  test("has servers, a unique operationId on every operation, and documented headers", () => {
    assert.ok(document.servers?.length);
    const ids = Object.values(document.paths).flatMap((item) => Object.values(item).map((operation) => operation.operationId));
    assert.ok(ids.every((id) => typeof id === "string" && id.length > 0));
    assert.equal(new Set(ids).size, ids.length);
    for (const header of ["X-Request-Id", "Retry-After", "WWW-Authenticate"]) assert.ok(document.components.headers?.[header], header);
    assert.equal(document.components.parameters?.RequestId?.in, "header", "the caller's X-Request-Id is a documented request header");
    const invoke = document.paths["/{agent_id}/invoke"]!.post!;
    assert.ok(invoke.responses["200"]!.headers?.["X-Request-Id"]);
    assert.ok(invoke.responses["401"]!.headers?.["WWW-Authenticate"]);
    assert.ok(invoke.responses["409"]!.headers?.["Retry-After"], "conversation_busy carries Retry-After");
    assert.ok(invoke.responses["429"]!.headers?.["Retry-After"], "a provider's Retry-After is passed on");
    assert.deepEqual(document.paths["/health/live"]!.get!.security, [], "probes need no token");
    assert.ok(invoke.responses["200"]!.headers?.["X-Run-Id"], "a run's answer names the run");
    assert.ok(document.paths["/{agent_id}/stream"]!.post!.responses["200"]!.headers?.["X-Run-Id"]);
    assert.ok(document.paths["/{agent_id}/runs/{run_id}/stream"]!.get!.responses["404"], "an unknown or expired run is 404");
    assert.ok(document.paths["/cancel"]!.post!.responses["200"], "the default agent's cancel");
  });

  test("a stopped invoke or resume is documented: 409 run_cancelled", () => {
    for (const path of ["/{agent_id}/invoke", "/invoke", "/{agent_id}/resume", "/resume"]) {
      const conflict = document.paths[path]!.post!.responses["409"];
      assert.match(conflict?.description ?? "", /`run_cancelled`/, path);
      assert.match(conflict?.description ?? "", /`conversation_busy`/, path);
    }
    // A stream reports it as an error event after its 200, not as a status.
    assert.doesNotMatch(document.paths["/{agent_id}/stream"]!.post!.responses["409"]?.description ?? "", /run_cancelled/);
  });

  test("content blocks: every accepted media form is documented, path is marked refused, and the URL pattern refuses relative URLs", async () => {
    type Property = { description?: string; pattern?: string; oneOf?: Array<{ properties: Record<string, { enum?: string[] }> }>; enum?: string[] };
    const schemas = (document.components as { schemas: Record<string, { oneOf: Array<{ properties: Record<string, Property> }> }> }).schemas;
    const media = schemas.ContentBlock!.oneOf.find((variant) => "mime_type" in variant.properties)!.properties;
    for (const field of ["url", "base64", "data", "file_id", "id", "source_type", "source", "mime_type", "filename", "metadata", "path"]) {
      assert.ok(media[field], `${field} is documented`);
    }
    assert.deepEqual(media.source_type!.enum, ["url", "base64", "id"]);
    assert.deepEqual(media.source!.oneOf!.map((form) => form.properties.type!.enum![0]), ["base64", "url", "file"]);
    assert.match(media.path!.description ?? "", /Refused/);
    assert.match(media.metadata!.description ?? "", /no object may have an "lc" key/);

    // The documented pattern and the service agree on which URLs a block may carry.
    const pattern = new RegExp(media.url!.pattern!, "i");
    for (const url of ["https://example.invalid/cat.png", "http://127.0.0.1:9/x", "data:image/png;base64,AAAA", "/cat.png", "cat.png", "//cdn/cat.png", "http://", "file:///etc/passwd"]) {
      const answer = await call(service, "POST", "/chatbot-agent/history/add_messages", {
        thread_id: "openapi-urls",
        messages: [{ type: "human", content: [{ type: "image", url }] }],
      });
      assert.equal(answer.status === 201, pattern.test(url), `${url}: answered ${answer.status}`);
    }
  });

  test("lists exactly the operations the app mounts", () => {
    const mounted = mountedOperations(createApp(service.runtime).router.stack);
    const reference = ["GET /", "GET /openapi.json", "GET /docs", "GET /docs/init.js", "GET /favicon.ico"];
    for (const entry of reference) assert.ok(mounted.delete(entry), `${entry} is served`);
    const fromRoutes = [...mounted].flatMap(documentedForms).sort();
    const fromDocument = Object.entries(document.paths)
      .flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`))
      .sort();
    assert.deepEqual(fromRoutes, fromDocument);
    assert.ok(fromDocument.length >= 20);
  });
});
