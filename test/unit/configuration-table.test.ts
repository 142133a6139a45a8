import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import { configShape } from "../../src/config/schema.ts";

test("the settings table of docs/configuration.md lists exactly the variables the schema reads", () => {
  const page = fs.readFileSync("docs/configuration.md", "utf8");
  const start = page.indexOf("## Every setting");
  assert.ok(start >= 0, "docs/configuration.md has its settings table");
  const section = page.slice(start, page.indexOf("\n## ", start + 5));
  const documented = new Set<string>();
  for (const line of section.split("\n")) {
    const first = /^\| ([A-Z0-9_, ]+) \|/.exec(line)?.[1];
    if (!first || first === "Variable") continue;
    for (const name of first.split(",")) documented.add(name.trim());
  }
  assert.deepEqual([...documented].sort(), Object.keys(configShape).sort());
});
