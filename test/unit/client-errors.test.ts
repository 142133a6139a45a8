// The client's reading of a failed response, on in-memory Responses: the body's detail and
// error_code, Retry-After, a body that is not JSON, and the one-line description of a detail.
import assert from "node:assert/strict";
import { test } from "node:test";
import { describeDetail, errorFromResponse } from "../../src/client/errors.ts";

test("describeDetail: text as it is, a validation list by its messages, anything else as JSON, on one line", () => {
  assert.equal(describeDetail("Not found."), "Not found.");
  assert.equal(describeDetail("  two\n  lines\t here "), "two lines here");
  assert.equal(describeDetail([{ loc: ["body"], msg: "Field required" }, { msg: "Too long" }, "odd", 3]), 'Field required; Too long; "odd"; 3');
  assert.equal(describeDetail({ reason: "x" }), '{"reason":"x"}');
  assert.equal(describeDetail(null), "null");
  assert.equal(describeDetail(undefined), "undefined");
  assert.equal(describeDetail(""), "");
});

test("describeDetail: cut at 500 characters with an ellipsis", () => {
  assert.equal(describeDetail("a".repeat(500)), "a".repeat(500));
  assert.equal(describeDetail("a".repeat(501)), `${"a".repeat(500)}…`);
});

test("errorFromResponse: detail, error_code and Retry-After from agenthost's JSON body", async () => {
  const response = new Response(JSON.stringify({ detail: "The worker is busy.", error_code: "service_busy" }), {
    status: 503,
    headers: { "content-type": "application/json", "retry-after": "1" },
  });
  const error = await errorFromResponse(response);
  assert.equal(error.kind, "http");
  assert.equal(error.statusCode, 503);
  assert.equal(error.errorCode, "service_busy");
  assert.equal(error.retryAfter, "1");
  assert.equal(error.detail, "The worker is busy.");
  assert.equal(error.message, "agenthost answered 503: The worker is busy.");
});

test("errorFromResponse: a body without detail or error_code, or not JSON at all", async () => {
  const noCode = await errorFromResponse(new Response(JSON.stringify({ detail: [{ msg: "Field required" }], error_code: 422 }), { status: 422 }));
  assert.equal(noCode.errorCode, null, "an error_code that is not text is ignored");
  assert.equal(noCode.message, "agenthost answered 422: Field required");
  assert.equal(noCode.retryAfter, null);

  const html = "<html><body>Bad Gateway</body></html>";
  const proxy = await errorFromResponse(new Response(html, { status: 502 }));
  assert.equal(proxy.detail, html);
  assert.equal(proxy.errorCode, null);

  const otherJson = await errorFromResponse(new Response("[1,2]", { status: 500 }));
  assert.equal(otherJson.detail, "[1,2]", "JSON that is not an object: the text is the detail");

  const empty = await errorFromResponse(new Response("  ", { status: 404, statusText: "Not Found" }));
  assert.equal(empty.detail, "Not Found");
  assert.equal(empty.message, "agenthost answered 404: Not Found");

  const nothing = await errorFromResponse(new Response(null, { status: 500 }));
  assert.equal(nothing.message, "agenthost answered 500");
});
