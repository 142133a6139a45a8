import { test } from "node:test";
import assert from "node:assert/strict";
import { ApiError } from "../../src/http/api-error.ts";
import { toApiError } from "../../src/http/error-answer.ts";
import { SERVICE_ERROR_KIND_NAMES, ServiceError } from "../../src/errors/service-error.ts";

test("every domain error kind answers 4xx exactly when it is a refusal", () => {
  for (const kind of SERVICE_ERROR_KIND_NAMES) {
    const error = new ServiceError(kind);
    const answer = toApiError(error);
    assert.equal(answer.status < 500, error.refusal, `${kind} answers ${answer.status}`);
    assert.ok(answer.errorCode, `${kind} has an error_code`);
  }
});

test("the mapping keeps a domain error's detail and Retry-After, and the catalogue's fixed headers", () => {
  const limited = toApiError(new ServiceError("model_rate_limited", { retryAfter: "7" }));
  assert.equal(limited.status, 429);
  assert.equal(limited.headers["Retry-After"], "7");
  const busy = toApiError(new ServiceError("conversation_busy", { detail: "Busy now." }));
  assert.deepEqual([busy.status, busy.detail, busy.headers["Retry-After"]], [409, "Busy now.", "1"]);
  assert.equal(toApiError(new ServiceError("unauthenticated")).headers["WWW-Authenticate"], "Bearer");
  assert.equal(toApiError(new Error("a bug")).errorCode, "internal_error");
  const own = new ApiError("method_not_allowed", { headers: { Allow: "GET" } });
  assert.equal(toApiError(own), own);
});
