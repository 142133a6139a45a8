import { test } from "node:test";
import assert from "node:assert/strict";
import { clearHistoryRequestSchema, historyQuerySchema } from "../../src/contract/requests.ts";
import { ServiceError } from "../../src/errors/service-error.ts";
import { bodyWithQuery, parseBody, parseQuery } from "../../src/http/parse-input.ts";

/** The detail a refused input answers with. */
function refusal(parse: () => unknown): string {
  try {
    parse();
  } catch (error) {
    assert.ok(error instanceof ServiceError && error.kind === "validation_failed", String(error));
    return error.detail ?? "";
  }
  assert.fail("accepted");
}

test("history query: thread_id required, empty user_id omitted, limit and offset as whole numbers", () => {
  assert.deepEqual(parseQuery(historyQuerySchema, { thread_id: "t", user_id: "", limit: "25", offset: "0", other: "x" }), {
    thread_id: "t",
    user_id: undefined,
    limit: 25,
    offset: 0,
  });
  assert.deepEqual(parseQuery(historyQuerySchema, { thread_id: "t" }), { thread_id: "t" });
  assert.equal(refusal(() => parseQuery(historyQuerySchema, { user_id: "ann" })), "thread_id: required; a user_id alone does not select a conversation");
  assert.equal(refusal(() => parseQuery(historyQuerySchema, { thread_id: "" })), "thread_id: required; a user_id alone does not select a conversation");
  assert.equal(refusal(() => parseQuery(historyQuerySchema, { thread_id: ["a", "b"] })), "thread_id: give it once, as a plain value");
  assert.equal(refusal(() => parseQuery(historyQuerySchema, { thread_id: "a".repeat(257) })), "thread_id: at most 256 characters");
  for (const limit of ["0", "-1", "abc", "1.5", "1e3", "", "12345678"]) {
    assert.equal(refusal(() => parseQuery(historyQuerySchema, { thread_id: "t", limit })), "limit: must be an integer of at least 1", limit);
  }
  assert.equal(refusal(() => parseQuery(historyQuerySchema, { thread_id: "t", offset: "-1" })), "offset: must be an integer of at least 0");
});

test("a body whose fields may come as query parameters: merged, refused when they disagree", () => {
  assert.deepEqual(bodyWithQuery(undefined, { thread_id: "t" }), { thread_id: "t" });
  assert.deepEqual(bodyWithQuery({ thread_id: "t" }, { thread_id: "t", user_id: "ann" }), { thread_id: "t", user_id: "ann" });
  assert.equal(refusal(() => bodyWithQuery({ thread_id: "t" }, { thread_id: "u" })), "thread_id: the body and the query disagree");
  assert.equal(bodyWithQuery("text", { thread_id: "t" }), "text", "a body that is not an object is left for the schema to refuse");
  assert.match(refusal(() => parseBody(clearHistoryRequestSchema, bodyWithQuery(["t"], {}))), /expected object/);
});

test("a body key that shadows a built-in object member is refused before the schema runs", () => {
  const body = JSON.parse('{"thread_id": "t", "constructor": {"x": 1}}') as unknown;
  assert.match(refusal(() => parseBody(clearHistoryRequestSchema, body)), /^constructor: this key names a member every JavaScript object has/);
});
