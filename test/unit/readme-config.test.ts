import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import { configShape } from "../../src/config/schema.ts";

test("the README's configuration table lists exactly the variables the schema reads", () => {
  const readme = fs.readFileSync("README.md", "utf8");
  const section = readme.slice(readme.indexOf("## Configuration"), readme.indexOf("\n## ", readme.indexOf("## Configuration") + 5));
  const documented = new Set<string>();
  for (const line of section.split("\n")) {
    const first = /^\| ([A-Z0-9_, ]+) \|/.exec(line)?.[1];
    if (!first || first === "Variable") continue;
    for (const name of first.split(",")) documented.add(name.trim());
  }
  assert.deepEqual([...documented].sort(), Object.keys(configShape).sort());
});
