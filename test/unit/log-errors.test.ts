import assert from "node:assert/strict";
import path from "node:path";
import { Writable } from "node:stream";
import { test } from "node:test";
import { connectionProblemForLog, createLogger, errorForLog, failureForLog, redactSecrets, relativeStack } from "../../src/observability/logger.ts";

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

test("credentials and feedback proofs are censored at the top of a line and in its objects, the logged object left as it was", () => {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString("utf8")) as Record<string, unknown>);
      done();
    },
  });
  const logger = createLogger({ LOG_LEVEL: "info" }, sink);
  const fields = {
    token: "t-1",
    api_key: "sk-1",
    req: { headers: { authorization: "Bearer secret", accept: "*/*" }, method: "POST" },
    body: { feedback_token: "proof", score: 1 },
    model: { api_key: "sk-2", name: "gpt" },
    deep: { a: { b: { token: "four levels down is not looked at" } } },
    route: "/invoke",
    err: Object.assign(new Error("boom"), { token: "on the error" }),
  };
  logger.info(fields, "request");
  assert.deepEqual(fields.req.headers, { authorization: "Bearer secret", accept: "*/*" }, "the logged object is not changed");
  const [line] = lines;
  assert.ok(line);
  assert.equal(line.token, "[redacted]");
  assert.equal(line.api_key, "[redacted]");
  assert.deepEqual(line.req, { headers: { authorization: "[redacted]", accept: "*/*" }, method: "POST" });
  assert.deepEqual(line.body, { feedback_token: "[redacted]", score: 1 });
  assert.deepEqual(line.model, { api_key: "[redacted]", name: "gpt" });
  assert.deepEqual(line.deep, { a: { b: { token: "four levels down is not looked at" } } });
  assert.equal(line.route, "/invoke");
  assert.deepEqual(Object.keys(line.err as object).sort(), ["message", "stack", "type"]);
  assert.equal(line.msg, "request");
  const plain = { route: "/invoke", status: 200 };
  assert.equal(redactSecrets(plain), plain, "a line without secrets is not copied");
});
