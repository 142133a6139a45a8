// Provider-error classification on error objects shaped like the SDKs' own (their class names, status,
// headers, lc_error_code, undici codes), wrapped the way LangChain and agent middleware wrap them.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { ServiceError } from "../../src/errors/service-error.ts";
import { toApiError } from "../../src/http/error-answer.ts";
import { classifyProviderError } from "../../src/models/provider-errors.ts";

const SECRET_TEXT = "sk-live-provider-said-something-private";

/** An error whose class is called `name`, as the OpenAI and Anthropic SDKs name theirs. */
function sdkError(name: string, fields: Record<string, unknown>): Error {
  const cls = { [name]: class extends Error {} }[name]!;
  return Object.assign(new cls(`${name}: ${SECRET_TEXT}`), fields);
}

/** `error` wrapped `depth` times in plain Errors through `cause`. */
function wrapped(error: unknown, depth: number): unknown {
  let e = error;
  for (let i = 0; i < depth; i++) e = new Error(`layer ${i}`, { cause: e });
  return e;
}

/** What the caller is answered for a classified provider error. */
function summary(error: ServiceError | undefined) {
  const answer = error && toApiError(error);
  return answer && { status: answer.status, code: answer.errorCode, retryAfter: answer.headers["Retry-After"] };
}

test("HTTP statuses of the SDKs' error classes map to the catalogue", () => {
  const cases: Array<[string, number, { status: number; code: string }]> = [
    ["AuthenticationError", 401, { status: 503, code: "model_authentication_failed" }],
    ["PermissionDeniedError", 403, { status: 503, code: "model_authentication_failed" }],
    ["RateLimitError", 429, { status: 429, code: "model_rate_limited" }],
    ["APIError", 408, { status: 504, code: "model_timeout" }],
    ["InternalServerError", 500, { status: 503, code: "model_unavailable" }],
    ["APIError", 529, { status: 503, code: "model_unavailable" }],
    ["BadRequestError", 400, { status: 502, code: "model_request_rejected" }],
    ["NotFoundError", 404, { status: 502, code: "model_request_rejected" }],
    ["UnprocessableEntityError", 422, { status: 502, code: "model_request_rejected" }],
    ["GoogleGenerativeAIFetchError", 503, { status: 503, code: "model_unavailable" }],
  ];
  for (const [cls, status, expected] of cases) {
    const result = classifyProviderError(sdkError(cls, { status }));
    assert.deepEqual(summary(result), { ...expected, retryAfter: undefined }, `${cls} ${status}`);
  }
});

test("a rejected request says which status, never the provider's text", () => {
  const result = classifyProviderError(sdkError("BadRequestError", { status: 400, error: { message: SECRET_TEXT } }));
  assert.ok(result);
  assert.match(toApiError(result).detail, /HTTP 400/);
  for (const kind of [401, 429, 500, 400]) {
    const e = classifyProviderError(sdkError("APIError", { status: kind }));
    assert.ok(e && !toApiError(e).detail.includes(SECRET_TEXT) && !e.message.includes(SECRET_TEXT), String(kind));
  }
});

test("a status counts only on a provider's error: SDK class, MODEL_ lc_error_code, or headers plus error", () => {
  assert.equal(classifyProviderError(Object.assign(new Error("x"), { status: 500 })), undefined, "any error with a status");
  assert.equal(classifyProviderError(Object.assign(new Error("x"), { status: 401, headers: {} })), undefined);
  assert.equal(summary(classifyProviderError(Object.assign(new Error("x"), { status: 401, lc_error_code: "MODEL_AUTHENTICATION" })))?.code, "model_authentication_failed");
  assert.equal(classifyProviderError(Object.assign(new Error("x"), { status: 401, lc_error_code: "GRAPH_RECURSION_LIMIT" })), undefined);
  assert.equal(summary(classifyProviderError({ status: 429, headers: {}, error: {} }))?.code, "model_rate_limited");
  assert.equal(classifyProviderError(sdkError("RateLimitError", { status: 399 })), undefined, "below 400 is no failure");
  assert.equal(classifyProviderError(sdkError("RateLimitError", { status: "429" })), undefined, "a status that is not a number");
});

test("Retry-After is passed on when it is delta-seconds or an HTTP date, from a Headers object or a plain record", () => {
  const rateLimited = (headers: unknown) => summary(classifyProviderError(sdkError("RateLimitError", { status: 429, headers })))?.retryAfter;
  assert.equal(rateLimited(new Headers({ "retry-after": "20" })), "20");
  assert.equal(rateLimited({ "retry-after": " 7 " }), "7");
  assert.equal(rateLimited({ "retry-after": "Wed, 21 Oct 2026 07:28:00 GMT" }), "Wed, 21 Oct 2026 07:28:00 GMT");
  // (V8's Date.parse also takes "1.5" or "-1" as dates, so those pass through: not pinned here.)
  for (const bad of ["soon", "1234567890", "", "   "]) assert.equal(rateLimited({ "retry-after": bad }), undefined, bad);
  assert.equal(rateLimited({ "retry-after": 20 }), undefined, "not a string");
  assert.equal(rateLimited(undefined), undefined);
  assert.equal(rateLimited({}), undefined);
  assert.equal(summary(classifyProviderError(sdkError("InternalServerError", { status: 503, headers: { "retry-after": "5" } })))?.retryAfter, undefined, "only a 429 carries it");
});

test("timeouts and connection failures without a status", () => {
  const code = (c: string) => Object.assign(new Error("fetch failed"), { code: c });
  const timeouts = [
    sdkError("APIConnectionTimeoutError", {}),
    Object.assign(new Error("t"), { name: "TimeoutError" }),
    code("UND_ERR_HEADERS_TIMEOUT"),
    code("UND_ERR_BODY_TIMEOUT"),
    code("UND_ERR_CONNECT_TIMEOUT"),
  ];
  for (const e of timeouts) assert.equal(summary(classifyProviderError(e))?.code, "model_timeout", e.message);
  const connection = [
    sdkError("APIConnectionError", {}),
    code("UND_ERR_SOCKET"),
    sdkError("GoogleGenerativeAIError", { message: "Error fetching from https://generativelanguage.googleapis.com" }),
  ];
  for (const e of connection) assert.equal(summary(classifyProviderError(e))?.code, "model_unavailable", e.message);
  assert.equal(classifyProviderError(sdkError("GoogleGenerativeAIError", { message: "Candidate was blocked" })), undefined);
  assert.equal(classifyProviderError(code("ECONNREFUSED")), undefined, "not an undici code");
});

test("the cause chain is searched up to 8 levels; the outermost status wins over a timeout", () => {
  const limited = sdkError("RateLimitError", { status: 429 });
  assert.equal(summary(classifyProviderError(wrapped(limited, 7)))?.code, "model_rate_limited");
  assert.equal(classifyProviderError(wrapped(limited, 8)), undefined, "the ninth level is not read");
  const outer = sdkError("AuthenticationError", { status: 401, cause: sdkError("InternalServerError", { status: 500 }) });
  assert.equal(summary(classifyProviderError(outer))?.code, "model_authentication_failed");
  const timeoutAroundStatus = Object.assign(new Error("t"), { name: "TimeoutError", cause: sdkError("APIError", { status: 502 }) });
  assert.equal(summary(classifyProviderError(timeoutAroundStatus))?.code, "model_unavailable", "a status anywhere beats a timeout");
});

test("anything else is not a provider error", () => {
  const others: unknown[] = [undefined, null, "boom", 42, new Error("boom"), new TypeError("x is not a function"), {}, Object.create(null)];
  others.forEach((e, i) => assert.equal(classifyProviderError(e), undefined, `case ${i}`));
});
