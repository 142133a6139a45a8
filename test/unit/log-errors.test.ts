import assert from "node:assert/strict";
import path from "node:path";
import { test } from "node:test";
import { connectionProblemForLog, errorForLog, failureForLog, relativeStack } from "../../src/observability/logger.ts";

const ROOT = path.resolve(import.meta.dirname, "../..");

test("an unexpected error is logged by type, message, code and a stack relative to the project, nothing else", () => {
  const error = Object.assign(new Error("boom"), { code: "E_BOOM", headers: { authorization: "Bearer secret" }, config: { apiKey: "sk-1" } });
  const logged = errorForLog(error);
  assert.deepEqual(Object.keys(logged).sort(), ["code", "message", "stack", "type"]);
  assert.equal(logged.type, "Error");
  assert.equal(logged.code, "E_BOOM");
  assert.ok(!String(logged.stack).includes(ROOT), String(logged.stack));
  assert.match(String(logged.stack), /test\/unit\/log-errors\.test\.ts/);
  assert.equal(relativeStack(`at f (file://${ROOT}/src/a.ts:1:2)\n  at g (${ROOT}/node_modules/x/y.js:3:4)`), "at f (src/a.ts:1:2)\n  at g (node_modules/x/y.js:3:4)");
});

test("an expected failure is logged by type and code only", () => {
  assert.deepEqual(failureForLog(Object.assign(new Error("connect ECONNREFUSED 10.0.0.1:5432 password=x"), { code: "ECONNREFUSED" })), {
    err_type: "Error",
    err_code: "ECONNREFUSED",
  });
});

test("a connection problem is logged by type, code and the first line of its message, without URLs", () => {
  const error = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:6379\n    at TCPConnectWrap.afterConnect"), { code: "ECONNREFUSED" });
  assert.deepEqual(connectionProblemForLog(error), { err_type: "Error", err_code: "ECONNREFUSED", reason: "connect ECONNREFUSED 127.0.0.1:6379" });
  const withUrl = connectionProblemForLog(new Error("cannot reach redis://:hunter2@cache:6379 now"));
  assert.equal(withUrl.reason, "cannot reach [url] now");
  assert.equal(connectionProblemForLog({ message: "not an Error" }).reason, "(no message)");
  assert.equal(connectionProblemForLog(new Error("x".repeat(500))).reason.length, 200);
});
