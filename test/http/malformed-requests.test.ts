// Malformed requests are a 4xx with our JSON error body, never a 500, a bare parser answer or a 304
// (issue 11, failure 6): undecodable bodies, bad percent-encoding, HTTP the parser refuses, a wrong
// method, conditional headers.
import { gzipSync } from "node:zlib";
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { call, startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";
import { RawClient, type RawResponse } from "../helpers/raw-http.ts";

const AUTH = { authorization: `Bearer ${TEST_TOKEN}` };

/** Send raw bytes and read the one response; the connection must then close or stay usable, never hang. */
async function rawExchange(service: RunningService, request: string | Buffer): Promise<RawResponse> {
  const client = await RawClient.connect(service.url);
  client.write(request);
  try {
    return await client.response(5_000);
  } finally {
    client.destroy();
  }
}

function assertErrorBody(res: RawResponse, status: number, errorCode: string): void {
  assert.equal(res.status, status, res.body);
  assert.match(res.headers["content-type"] ?? "", /^application\/json/);
  const body = JSON.parse(res.body) as { detail: unknown; error_code: unknown };
  assert.equal(typeof body.detail, "string");
  assert.equal(body.error_code, errorCode);
  assert.doesNotMatch(res.body, /\bat .+:\d+:\d+/, "no stack trace");
}

async function json(res: Response): Promise<RawResponse> {
  const headers: Record<string, string> = {};
  res.headers.forEach((value, name) => (headers[name] = value));
  return { status: res.status, headers, body: await res.text() };
}

describe("malformed requests", () => {
  let service: RunningService;
  before(async () => {
    service = await startService();
  });
  after(() => service.close());

  test("a body that does not decode with its Content-Encoding is 400 undecodable_body", async () => {
    for (const encoding of ["gzip", "deflate", "br"]) {
      const res = await fetch(`${service.url}/invoke`, {
        method: "POST",
        headers: { ...AUTH, "content-type": "application/json", "content-encoding": encoding },
        body: "this is not compressed",
      });
      assertErrorBody(await json(res), 400, "undecodable_body");
    }
    // A truncated gzip stream is undecodable too.
    const truncated = gzipSync(JSON.stringify({ input: { message: "hello" } })).subarray(0, 12);
    const res = await fetch(`${service.url}/invoke`, {
      method: "POST",
      headers: { ...AUTH, "content-encoding": "gzip" },
      body: truncated,
    });
    assertErrorBody(await json(res), 400, "undecodable_body");
    // A well-formed gzip body still works.
    const ok = await fetch(`${service.url}/invoke`, {
      method: "POST",
      headers: { ...AUTH, "content-encoding": "gzip" },
      body: gzipSync(JSON.stringify({ input: { message: "hello" } })),
    });
    assert.equal(ok.status, 200);
  });

  test("an unsupported Content-Encoding or charset is 415 unsupported_media_type", async () => {
    const encoded = await fetch(`${service.url}/invoke`, {
      method: "POST",
      headers: { ...AUTH, "content-encoding": "compress" },
      body: "{}",
    });
    assertErrorBody(await json(encoded), 415, "unsupported_media_type");
    const charset = await fetch(`${service.url}/invoke`, {
      method: "POST",
      headers: { ...AUTH, "content-type": "application/json; charset=klingon" },
      body: "{}",
    });
    assertErrorBody(await json(charset), 415, "unsupported_media_type");
  });

  test("invalid percent-encoding in the path is 400 bad_request", async () => {
    for (const path of ["/%FF/invoke", "/%E0%A4%A/stream", "/%C0/history?thread_id=t"]) {
      const method = path.includes("history") ? "GET" : "POST";
      const res = await call(service, method, path, method === "POST" ? { input: { message: "x" } } : undefined);
      assertErrorBody(await json(res), 400, "bad_request");
    }
  });

  test("requests Node's HTTP parser refuses get our JSON error body and a closed connection", async () => {
    const cases: Array<[string, string | Buffer, number, string]> = [
      ["garbage request line", "NOT HTTP AT ALL\r\n\r\n", 400, "bad_request"],
      ["invalid header name", "GET /info HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n", 400, "bad_request"],
      ["Content-Length and Transfer-Encoding", "POST /invoke HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}", 400, "bad_request"],
      [
        "invalid chunk size",
        `POST /invoke HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TEST_TOKEN}\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
        400,
        "bad_request",
      ],
      ["headers too large", `GET /info HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`, 431, "headers_too_large"],
    ];
    for (const [name, request, status, code] of cases) {
      const res = await rawExchange(service, request);
      assertErrorBody(res, status, code);
      assert.equal(res.headers.connection, "close", name);
    }
  });

  test("an Expect other than 100-continue is 417 with our JSON body", async () => {
    const res = await rawExchange(service, `POST /invoke HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TEST_TOKEN}\r\nExpect: something-else\r\nContent-Length: 2\r\n\r\n{}`);
    assertErrorBody(res, 417, "expectation_failed");
  });

  test("a wrong method on a known path is 405 with Allow; an unknown path stays 404", async () => {
    const cases: Array<[string, string, string, boolean]> = [
      ["PUT", "/info", "GET, HEAD", true],
      ["POST", "/history", "GET, HEAD", true],
      ["GET", "/invoke", "POST", true],
      ["DELETE", "/chatbot-agent/stream", "POST", true],
      ["GET", "/chatbot-agent/stream/jsonl", "POST", true],
      ["POST", "/chatbot-agent/history/clear", "DELETE", true],
      ["GET", "/resume", "POST", true],
      ["PATCH", "/feedback", "POST", true],
      // Public routes answer before authentication, so no token is needed to learn their methods.
      ["POST", "/health/live", "GET, HEAD", false],
      ["DELETE", "/openapi.json", "GET, HEAD", false],
    ];
    for (const [method, path, allow, withToken] of cases) {
      const res = await call(service, method, path, undefined, withToken ? TEST_TOKEN : null);
      assert.equal(res.status, 405, `${method} ${path}`);
      assert.equal(res.headers.get("allow"), allow, `${method} ${path}`);
      assert.deepEqual(await res.json(), { detail: "This path does not accept this method.", error_code: "method_not_allowed" });
    }
    const head = await fetch(`${service.url}/invoke`, { method: "HEAD", headers: AUTH });
    assert.equal(head.status, 405);
    assert.equal(head.headers.get("allow"), "POST");
    assert.equal((await fetch(`${service.url}/info`, { method: "HEAD", headers: AUTH })).status, 200);
    assert.equal((await call(service, "GET", "/no/such/path")).status, 404);
    assert.equal((await call(service, "PUT", "/info", undefined, null)).status, 401, "API routes still authenticate first");
  });

  test("conditional request headers never turn an API answer into a 304", async () => {
    // Raw, because fetch adds Cache-Control: no-cache to conditional requests, which hides the bug.
    const conditions = ["If-None-Match: *", 'If-None-Match: W/"x", *', `If-Modified-Since: ${new Date(Date.now() + 86_400_000).toUTCString()}`];
    for (const condition of conditions) {
      for (const path of ["/info", "/history?thread_id=conditional", "/openapi.json"]) {
        const res = await rawExchange(service, `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TEST_TOKEN}\r\n${condition}\r\n\r\n`);
        assert.equal(res.status, 200, `${path} ${condition}`);
        assert.ok(res.body.length > 0);
      }
    }
  });
});
