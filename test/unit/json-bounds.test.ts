import assert from "node:assert/strict";
import { test } from "node:test";
import { JSON_MAX_BYTES, JSON_MAX_DEPTH, jsonBoundsProblem, shadowingKeyPath } from "../../src/contract/json-bounds.ts";

test("depth counts containers: scalars 0, {} 1, the bound itself is allowed", () => {
  assert.equal(jsonBoundsProblem("x", 0), undefined);
  assert.equal(jsonBoundsProblem({}, 0), "nested deeper than 0 levels");
  assert.equal(jsonBoundsProblem({ a: [1, { b: null }] }, 3), undefined);
  assert.equal(jsonBoundsProblem({ a: [1, { b: {} }] }, 3), "nested deeper than 3 levels");
  let value: unknown = 1;
  for (let i = 0; i < JSON_MAX_DEPTH; i++) value = [value];
  assert.equal(jsonBoundsProblem(value), undefined);
  assert.equal(jsonBoundsProblem([value]), `nested deeper than ${JSON_MAX_DEPTH} levels`);
});

test("a million levels are measured without overflowing the stack", () => {
  const deep: unknown = JSON.parse(`${"[".repeat(1_000_000)}${"]".repeat(1_000_000)}`);
  assert.equal(jsonBoundsProblem(deep), `nested deeper than ${JSON_MAX_DEPTH} levels`);
});

test("size is the JSON text's length, near enough, counting keys", () => {
  const limit = `larger than ${JSON_MAX_BYTES} bytes as JSON`;
  assert.equal(jsonBoundsProblem({ s: "a".repeat(JSON_MAX_BYTES - 100) }), undefined);
  assert.equal(jsonBoundsProblem({ s: "a".repeat(JSON_MAX_BYTES) }), limit);
  assert.equal(jsonBoundsProblem({ ["k".repeat(JSON_MAX_BYTES)]: 1 }), limit);
  assert.equal(jsonBoundsProblem(Array.from({ length: JSON_MAX_BYTES / 2 }, () => 0)), limit);
  assert.equal(jsonBoundsProblem(Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${i}`, i]))), undefined);
});

test("values JSON cannot carry are refused", () => {
  assert.equal(jsonBoundsProblem({ f: () => 1 }), "is not JSON");
  assert.equal(jsonBoundsProblem(Symbol("s")), "is not JSON");
});

test("an object with an lc key, at any depth, is LangChain's serialization marker and is refused", () => {
  const refused = 'holds an object with an "lc" key, reserved for LangChain\'s serialization format';
  assert.equal(jsonBoundsProblem({ lc: 1, type: "secret", id: ["KEY"] }), refused);
  assert.equal(jsonBoundsProblem({ a: [{ b: { lc: 2, type: "undefined" } }] }), refused);
  assert.equal(jsonBoundsProblem({ lc_kwargs: 1, LC: 1, a: ["lc"] }), undefined);
});

test("shadowing keys are found at any depth, as JSON.parse makes them, with their path", () => {
  assert.equal(shadowingKeyPath(JSON.parse('{"a":[1,{"b":{"__proto__":{"x":1}}}]}')), "a.1.b.__proto__");
  assert.equal(shadowingKeyPath({ input: { message: "x", toString: "y" } }), "input.toString");
  assert.equal(shadowingKeyPath({ prototype: 1 }), "prototype");
  assert.equal(shadowingKeyPath({ proto: 1, to_string: 2, Constructor: 3, list: ["toString"] }), undefined);
  const deep: unknown = JSON.parse(`${'{"a":'.repeat(200_000)}{"valueOf":1}${"}".repeat(200_000)}`);
  assert.equal(shadowingKeyPath(deep)?.endsWith("a.a.valueOf"), true);
});
