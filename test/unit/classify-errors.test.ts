// What a caller sees for whatever a run or a storage call threw: the abort reason first, then the
// error's own kind (API error, recursion limit, unreadable conversation, database, provider), else
// run_failed.
import assert from "node:assert/strict";
import { test } from "node:test";
import { GraphRecursionError } from "@langchain/langgraph";
import pg from "pg";
import { DatabaseUnavailableError } from "../../src/checkpoints/database-errors.ts";
import { UnreadableCheckpointError } from "../../src/checkpoints/readable-serde.ts";
import { classifyStorageError } from "../../src/checkpoints/storage-failure.ts";
import { RunAborted } from "../../src/errors/classify.ts";
import { ServiceError } from "../../src/errors/service-error.ts";
import type { ApiError } from "../../src/http/api-error.ts";
import { toApiError } from "../../src/http/error-answer.ts";
import { classifyRunError } from "../../src/runs/run-failure.ts";

const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
const rateLimited = Object.assign(new (class RateLimitError extends Error {})("429 from the provider"), { status: 429 });

/** What the caller is answered for a run's failure, and for a storage failure (when it is one). */
const run = (...args: Parameters<typeof classifyRunError>): ApiError => toApiError(classifyRunError(...args));
const storage = (error: unknown): ApiError | undefined => {
  const classified = classifyStorageError(error);
  return classified && toApiError(classified);
};

const seen = (e: ApiError) => ({ status: e.status, code: e.errorCode, detail: e.detail });

test("a run's abort reason decides, whatever the graph threw for it", () => {
  const thrown = [new Error("AbortError"), new ServiceError("run_failed"), rateLimited, undefined];
  const expected = {
    deadline: { status: 504, code: "request_timeout" },
    lock_lost: { status: 503, code: "lock_unavailable" },
    shutting: { status: 503, code: "shutting_down" },
    client_disconnected: { status: 499, code: "client_disconnected" },
  } as const;
  for (const error of thrown) {
    for (const reason of ["deadline", "lock_lost", "shutdown", "client_disconnected"] as const) {
      const e = run(error, new RunAborted(reason));
      const want = expected[reason === "shutdown" ? "shutting" : reason];
      assert.deepEqual({ status: e.status, code: e.errorCode }, want, `${reason} after ${String(error)}`);
    }
  }
  assert.match(run(undefined, new RunAborted("lock_lost")).detail, /lock was lost during the run/);
  assert.match(run(undefined, new RunAborted("client_disconnected")).detail, /client closed the connection/);
});

test("an abort reason that is not RunAborted is ignored", () => {
  for (const reason of [new Error("some other abort"), "deadline", { reason: "deadline" }]) {
    assert.equal(run(rateLimited, reason).errorCode, "model_rate_limited");
  }
});

test("the service's own error is passed on as it is", () => {
  const thrown = new ServiceError("conversation_busy", { detail: "custom detail" });
  assert.equal(classifyRunError(thrown), thrown);
});

test("the recursion limit is the caller's outcome (422) only when the request set it", () => {
  const limit = new GraphRecursionError("Recursion limit of 25 reached");
  assert.deepEqual(seen(run(limit)), {
    status: 500,
    code: "recursion_limit_exceeded",
    detail: "The run reached its recursion limit before finishing; raise recursion_limit or simplify the request.",
  });
  const requested = run(limit, undefined, { callerRecursionLimit: true });
  assert.equal(requested.status, 422);
  assert.equal(requested.errorCode, "recursion_limit_exceeded");
  assert.equal(run(limit, undefined, { callerRecursionLimit: false }).status, 500);
});

test("storage failures: an unreadable conversation anywhere in 5 levels of causes, then an unavailable database", () => {
  const unreadable = new UnreadableCheckpointError(new SyntaxError("Unexpected token"));
  let nested: unknown = unreadable;
  for (let i = 0; i < 4; i++) nested = new Error(`layer ${i}`, { cause: nested });
  assert.equal(storage(nested)?.errorCode, "conversation_unreadable");
  assert.equal(storage(new Error("layer 4", { cause: nested })), undefined, "the sixth level is not read");
  assert.equal(storage(new DatabaseUnavailableError("serverdb", refused))?.errorCode, "database_unavailable");
  assert.equal(storage(new Error("read failed", { cause: new pg.DatabaseError("the database system is shutting down", 0, "error") }))?.status, 503);
  assert.equal(storage(refused), undefined, "a bare ECONNREFUSED could as well be the provider's");
  // An unreadable conversation wins over a database failure in the same chain.
  assert.equal(storage(new UnreadableCheckpointError(refused))?.errorCode, "conversation_unreadable");
  for (const other of [new Error("boom"), rateLimited, undefined]) assert.equal(storage(other), undefined);
});

test("a run's failure: storage before provider, and run_failed for anything else", () => {
  assert.equal(run(new UnreadableCheckpointError(new Error("x"))).errorCode, "conversation_unreadable");
  assert.equal(run(new DatabaseUnavailableError("filedb", new Error("SQLITE_BUSY"))).errorCode, "database_unavailable");
  assert.equal(run(new Error("wrapped", { cause: rateLimited })).errorCode, "model_rate_limited");
  for (const other of [new Error("boom"), new TypeError("x is not a function"), "text", undefined]) {
    assert.deepEqual(seen(run(other)), { status: 500, code: "run_failed", detail: "The agent run failed." });
  }
});
