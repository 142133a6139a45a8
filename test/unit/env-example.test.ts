// .env.example is generated from the config schema (scripts/env-example.ts) and must stay in step.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { renderEnvExample } from "../../scripts/env-example.ts";
import { configShape } from "../../src/config/schema.ts";

test(".env.example is what `npm run env:example` writes from the schema today", () => {
  const expected = renderEnvExample(readFileSync("README.md", "utf8"));
  assert.equal(readFileSync(".env.example", "utf8"), expected, "run `npm run env:example` and commit .env.example");
});

test(".env.example lists every setting once, with the schema's default", () => {
  const text = readFileSync(".env.example", "utf8");
  const settings = [...text.matchAll(/^# ([A-Z][A-Z0-9_]*)=(.*)$/gm)].map((m) => [m[1]!, m[2]!] as const);
  assert.deepEqual(settings.map(([name]) => name), Object.keys(configShape));
  const values = new Map(settings);
  assert.equal(values.get("PORT"), "8080");
  assert.equal(values.get("MEMORY_BACKEND"), "memory");
  assert.equal(values.get("USE_FAKE_MODEL"), "false");
  assert.equal(values.get("AGENT_PATHS"), "[]");
  assert.equal(values.get("WEB_CONCURRENCY"), "", "depends on MEMORY_BACKEND: explained in its comment");
});
