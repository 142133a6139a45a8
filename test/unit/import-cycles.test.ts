// scripts/check-cycles.mjs, which npm test runs over src/: it names a cycle, type-only and
// re-exports included, and an import up the layers, and passes a tree without either.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const SCRIPT = fileURLToPath(new URL("../../scripts/check-cycles.mjs", import.meta.url));

function check(files: Record<string, string>) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agenthost-cycles-"));
  try {
    for (const [name, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
      fs.writeFileSync(path.join(dir, name), text);
    }
    return spawnSync(process.execPath, [SCRIPT, dir], { encoding: "utf8" });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test("a cycle through a type-only import and a re-export is named, module by module", () => {
  const result = check({
    "a/a.ts": 'import type { B } from "./b.ts";\nexport type A = B;\n',
    "a/b.ts": 'export { c } from "../c.ts";\nexport type B = 1;\n',
    "c.ts": 'import "./a/a.ts";\nimport fs from "node:fs";\nexport const c = fs;\n',
  });
  assert.equal(result.status, 1);
  assert.match(result.stderr, /a\/a\.ts -> a\/b\.ts -> c\.ts -> a\/a\.ts/);
});

test("modules that only look down pass", () => {
  const result = check({
    "top.ts": 'import { low } from "./lib/low.ts";\nexport const top = low;\n',
    "lib/low.ts": "export const low = 1;\n",
  });
  assert.equal(result.status, 0, result.stderr);
});

test("an import up the layers is named with both layers; one down, or within a layer, passes", () => {
  const result = check({
    "errors/classify.ts": 'import type { Row } from "../checkpoints/rows.ts";\nexport type E = Row;\n',
    "checkpoints/rows.ts": 'import { code } from "../errors/codes.ts";\nimport { model } from "../models/model.ts";\nexport type Row = typeof code | typeof model;\n',
    "errors/codes.ts": "export const code = 1;\n",
    "models/model.ts": "export const model = 2;\n",
  });
  assert.equal(result.status, 1);
  assert.match(result.stderr, /1 import\(s\) up the layers/);
  assert.match(result.stderr, /errors\/classify\.ts \(foundations\) -> checkpoints\/rows\.ts \(domain services\)/);
});
