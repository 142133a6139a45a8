// .env.example is generated from the config schema (scripts/env-example.ts) and must stay in step.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { renderEnvExample } from "../../scripts/env-example.ts";
import { loadConfig } from "../../src/config/load.ts";
import { configShape } from "../../src/config/schema.ts";

test(".env.example is what `npm run env:example` writes from the schema today", () => {
  const expected = renderEnvExample(readFileSync("docs/configuration.md", "utf8"));
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

/** .env.example as (meaning, name, value) entries: each setting is a comment line, then `# NAME=value`. */
function entries(): { meaning: string; name: string; value: string }[] {
  const text = readFileSync(".env.example", "utf8");
  return [...text.matchAll(/^# (.*)\n# ([A-Z][A-Z0-9_]*)=(.*)$/gm)].map((m) => ({ meaning: m[1]!, name: m[2]!, value: m[3]! }));
}

test("every setting in .env.example has a meaning from the table of docs/configuration.md", () => {
  const listed = entries();
  assert.deepEqual(listed.map((e) => e.name), Object.keys(configShape), "each setting follows its meaning line");
  const missing = listed.filter((e) => e.meaning.includes("not in docs/configuration.md") || e.meaning.trim() === "").map((e) => e.name);
  assert.deepEqual(missing, []);
  const byName = new Map(listed.map((e) => [e.name, e.meaning]));
  assert.match(byName.get("AUTH_SECRET")!, /bearer token/);
  assert.match(byName.get("DATABASE_URL")!, /PostgreSQL/);
  assert.match(byName.get("REDIS_URL")!, /Redis/);
  assert.match(byName.get("OPENAI_API_KEY")!, /OpenAI/);
  assert.match(byName.get("DEFAULT_MODEL")!, /model/);
});

test("every default in .env.example loads through loadConfig, one at a time and all uncommented together", () => {
  // The only setting production needs that has no default: a credential (.env.example's header says so).
  const credential = { AUTH_SECRET: "a-token-for-the-env-example-test" };
  const listed = entries();
  for (const { name, value } of listed) {
    const base = name === "AUTH_SECRET" ? { AUTH_USERS: '{"ada":"a-token-for-ada"}' } : credential;
    assert.doesNotThrow(() => loadConfig({ ...base, [name]: value }), `${name}=${value} as written in .env.example`);
  }
  const all = Object.fromEntries(listed.map((e) => [e.name, e.value]));
  const config = loadConfig({ ...all, ...credential });
  assert.deepEqual(config.CORS_ALLOW_ORIGINS, []);
  assert.deepEqual(config.AGENT_PATHS, []);
  assert.deepEqual(config.DEEP_AGENT_INTERRUPT_ON, []);
  assert.equal(config.PORT, 8080);
  assert.equal(config.MEMORY_BACKEND, "memory");
  assert.equal(config.WEB_CONCURRENCY, 1);
  assert.throws(() => loadConfig(all), /requires credentials: set AUTH_SECRET, AUTH_USERS or AUTH_JWT_ISSUER/, "the header's one required setting");
  assert.match(readFileSync(".env.example", "utf8"), /^# .*set AUTH_SECRET, AUTH_USERS or AUTH_JWT_ISSUER/m);
});
