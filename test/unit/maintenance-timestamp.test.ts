import { test } from "node:test";
import assert from "node:assert/strict";
import { parseInstant } from "../../src/maintenance/timestamp.ts";

test("the timestamps the savers write parse to exact nanoseconds", () => {
  assert.equal(parseInstant("2025-01-31T12:00:00.000Z"), 1738324800000000000n); // LangGraph.js
  assert.equal(parseInstant("2025-01-31T12:00:00.123456+00:00"), 1738324800123456000n); // the Python release
  assert.equal(parseInstant("2025-01-31T14:00:00+02:00"), 1738324800000000000n);
  assert.equal(parseInstant("2025-01-31T07:30:00-0430"), 1738324800000000000n);
  assert.equal(parseInstant("2025-01-31 12:00Z"), 1738324800000000000n);
  assert.equal(parseInstant("0001-01-01T00:00:00Z"), -62135596800000000000n);
});

test("sub-millisecond order is kept", () => {
  const a = parseInstant("2025-01-31T12:00:00.000001Z") as bigint;
  const b = parseInstant("2025-01-31T12:00:00.0000011Z") as bigint;
  assert.ok(a < b);
});

test("no timezone, impossible dates and other text are invalid", () => {
  for (const text of [
    "2025-01-31T12:00:00",
    "2025-01-31",
    "2025-02-29T00:00:00Z",
    "2025-13-01T00:00:00Z",
    "2025-01-31T24:00:00Z",
    "2025-01-31T12:60:00Z",
    "2025-01-31T12:00:60Z",
    "2025-01-31T12:00:00+24:00",
    "last tuesday",
    "",
    " 2025-01-31T12:00:00Z",
    "1738324800",
  ]) {
    assert.equal(parseInstant(text), undefined, text);
  }
  assert.notEqual(parseInstant("2024-02-29T00:00:00Z"), undefined);
});
