import assert from "node:assert/strict";
import { test } from "node:test";
import Database from "../../src/checkpoints/sqlite-driver.ts";
import pg from "pg";
import {
  asDatabaseError,
  DatabaseUnavailableError,
  describeDatabaseFailure,
  isDatabaseError,
  isDatabaseFailure,
} from "../../src/checkpoints/database-errors.ts";
import { classifyRunError } from "../../src/runs/run-failure.ts";

const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });

test("driver errors and connection failures are database failures; the saver's own errors are not", () => {
  const failures = [
    new Database.SqliteError("database is locked", "SQLITE_BUSY"),
    new Database.SqliteError("database or disk is full", "SQLITE_FULL"),
    new pg.DatabaseError("canceling statement due to statement timeout", 0, "error"),
    new Error("Connection terminated unexpectedly"),
    new Error("Query read timeout"),
    new Error("timeout exceeded when trying to connect"),
    refused,
    new AggregateError([refused], "connect failed"),
    new Error("put failed", { cause: new Database.SqliteError("disk I/O error", "SQLITE_IOERR_WRITE") }),
  ];
  for (const error of failures) assert.ok(isDatabaseFailure(error), error.message);
  for (const error of [new TypeError("x is not a function"), new Error("Missing \"configurable\" field"), undefined, "text"]) {
    assert.equal(isDatabaseFailure(error), false, String(error));
  }
});

test("at the boundary a failure becomes DatabaseUnavailableError; anything else passes through unchanged", () => {
  const wrapped = asDatabaseError("serverdb", refused);
  assert.ok(wrapped instanceof DatabaseUnavailableError);
  assert.equal(wrapped.cause, refused);
  assert.equal(asDatabaseError("serverdb", wrapped), wrapped);
  const logic = new RangeError("bad");
  assert.equal(asDatabaseError("filedb", logic), logic);
});

test("far from the database, only what cannot be anything else counts: a bare ECONNREFUSED may be the provider's", () => {
  assert.ok(isDatabaseError(new DatabaseUnavailableError("filedb", new Error("x"))));
  assert.ok(isDatabaseError(new Database.SqliteError("database is locked", "SQLITE_BUSY")));
  assert.equal(isDatabaseError(refused), false);
  assert.equal(classifyRunError(new DatabaseUnavailableError("serverdb", refused)).kind, "database_unavailable");
  assert.equal(classifyRunError(new Error("wrapped", { cause: new pg.DatabaseError("terminating connection", 0, "error") })).kind, "database_unavailable");
});

test("a failure described for a log has its code and first line, no stack, no connection string or password", () => {
  const error = new DatabaseUnavailableError(
    "serverdb",
    Object.assign(new Error("could not reach postgres://app:s3cret@db.internal:5432/prod (password=s3cret)\n    at Socket.x (/app/node_modules/pg/lib/client.js:1:1)"), { code: "ECONNREFUSED" }),
  );
  const described = describeDatabaseFailure(error);
  assert.deepEqual(described, { backend: "serverdb", code: "ECONNREFUSED", reason: "could not reach [redacted] ([redacted]" });
  assert.doesNotMatch(JSON.stringify(described), /s3cret|db\.internal|node_modules/);
});
