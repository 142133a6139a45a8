// The contract's schemas and the route table load without the `langchain` package: a child process
// imports each module with resolution hooks that refuse any module of that package. A module known
// to use it (the request-model middleware) shows the hooks do refuse it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const FORBID = pathToFileURL(fileURLToPath(new URL("../helpers/forbid-langchain.mjs", import.meta.url))).href;

function importInChild(module: string): { ok: boolean; output: string } {
  const target = pathToFileURL(`${ROOT}${module}`).href;
  const child = spawnSync(process.execPath, ["--import", "tsx", "--import", FORBID, "--input-type=module", "-e", `await import(${JSON.stringify(target)});`], {
    cwd: ROOT,
    encoding: "utf8",
    timeout: 60_000,
  });
  return { ok: child.status === 0, output: `${child.stdout}${child.stderr}` };
}

test("the hooks refuse a module that imports langchain", () => {
  const outcome = importInChild("src/models/selection.ts");
  assert.equal(outcome.ok, false);
  assert.match(outcome.output, /the langchain package was loaded/);
});

for (const module of ["src/contract/requests.ts", "src/contract/messages.ts", "src/contract/responses.ts", "src/http/operations.ts", "src/http/openapi.ts"]) {
  test(`${module} loads without the langchain package`, () => {
    const outcome = importInChild(module);
    assert.ok(outcome.ok, outcome.output);
  });
}
