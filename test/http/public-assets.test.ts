// The API reference's static files and the favicon need no token (a browser asks for them without
// one), in token mode; nothing that holds data became public with them.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { listed, tryItOut, type ReferenceDocument } from "../helpers/api-reference.ts";
import { RawClient } from "../helpers/raw-http.ts";
import { startService, type RunningService } from "../helpers/service.ts";

let service: RunningService;
before(async () => {
  service = await startService({ AUTH_MODE: "token", AUTH_USERS: JSON.stringify({ ada: "ada-assets-token" }) });
});
after(() => service.close());

/** A request written as it is (no client normalises its path); status and body. */
async function raw(method: string, target: string): Promise<{ status: number; body: string }> {
  const client = await RawClient.connect(service.url);
  try {
    client.write(`${method} ${target} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n`);
    const response = await client.response();
    return { status: response.status, body: response.body.toString() };
  } finally {
    client.destroy();
  }
}

test("/favicon.ico answers 204 without a token, and may be kept", async () => {
  for (const method of ["GET", "HEAD"]) {
    const icon = await fetch(`${service.url}/favicon.ico`, { method });
    assert.equal(icon.status, 204, method);
    assert.match(icon.headers.get("cache-control") ?? "", /max-age=\d+/);
    assert.equal((await icon.arrayBuffer()).byteLength, 0);
  }
  const posted = await fetch(`${service.url}/favicon.ico`, { method: "POST" });
  assert.equal(posted.status, 405);
  assert.equal(posted.headers.get("allow"), "GET, HEAD");
});

test("the reference's files load without a token; a missing one is 404, not 401", async () => {
  const page = await (await fetch(`${service.url}/docs`)).text();
  const files = [...page.matchAll(/(?:href|src)="(\/docs\/[^"]+)"/g)].map((match) => match[1]!);
  assert.ok(files.includes("/docs/assets/favicon-32x32.png"), "the page names its icon");
  assert.ok(files.length >= 4, files.join(" "));
  for (const file of files) {
    const answer = await fetch(service.url + file);
    assert.equal(answer.status, 200, file);
    await answer.arrayBuffer();
  }
  for (const missing of ["/docs/assets/no-such-file.js", "/docs/oauth2-redirect.html", "/docs/assets/"]) {
    const answer = await fetch(service.url + missing);
    assert.equal(answer.status, 404, missing);
    assert.equal(((await answer.json()) as { error_code: string }).error_code, "not_found");
  }
});

test("no path out of the reference's folder is served", async () => {
  for (const target of [
    "/docs/assets/../../../package.json",
    "/docs/assets/%2e%2e/%2e%2e/%2e%2e/package.json",
    "/docs/assets/..%2f..%2f..%2fpackage.json",
    "/docs/assets/%2e%2e%5c%2e%2e%5cpackage.json",
    "/docs/../info",
    "/favicon.ico/../info",
  ]) {
    const { status, body } = await raw("GET", target);
    assert.notEqual(status, 200, `${target}: ${body.slice(0, 100)}`);
    assert.ok(!body.includes('"dependencies"') && !body.includes("chatbot-agent"), target);
  }
});

test("every operation that is not a probe still needs a token", async () => {
  const document = (await (await fetch(`${service.url}/openapi.json`)).json()) as ReferenceDocument & {
    paths: Record<string, Record<string, { security?: unknown[] }>>;
  };
  const operations = listed(document).filter(({ path, method }) => document.paths[path]![method.toLowerCase()]!.security === undefined);
  assert.ok(operations.length >= 50, `${operations.length} operations`);
  for (const operation of operations) {
    const request = tryItOut(document, operation);
    const answer = await fetch(service.url + request.url, {
      method: request.method,
      headers: request.body === undefined ? {} : { "content-type": "application/json" },
      body: request.body,
    });
    assert.equal(answer.status, 401, `${request.method} ${request.url}`);
    await answer.arrayBuffer();
  }
});
