// `npm start` never runs stale code: in a copy of the checkout's build machinery (package.json,
// bin/, scripts/build.mjs, the tsconfigs) around a one-file service that prints which build it is
// and where it runs from, `npm start` builds a missing dist/, reuses a current one, rebuilds one
// older than a source file, and runs nothing when that rebuild fails.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";
import { copyOfCheckout, removeTempFolders } from "./packaging-helper.ts";

let checkout: string;

/** The one-file service: src/cluster/main.ts, which bin/agenthost runs, printing its generation and its own URL. */
function writeService(generation: number | string): void {
  writeFileSync(
    path.join(checkout, "src/cluster/main.ts"),
    `const generation: number = ${generation};\nconsole.log(JSON.stringify({ generation, url: import.meta.url }));\n`,
  );
}

interface Start {
  readonly code: number | null;
  readonly compiled: boolean;
  readonly ran: { generation: number; url: string } | undefined;
  readonly output: string;
}

function npmStart(): Start {
  const result = spawnSync("npm", ["start", "--silent"], { cwd: checkout, encoding: "utf8", timeout: 110_000, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: checkout } });
  const line = result.stdout.split("\n").find((l) => l.startsWith("{"));
  return {
    code: result.status,
    compiled: result.stderr.includes("compiling to dist/"),
    ran: line ? (JSON.parse(line) as { generation: number; url: string }) : undefined,
    output: `${result.stdout}${result.stderr}`,
  };
}

before(() => {
  checkout = copyOfCheckout(["package.json", "bin", "scripts/build.mjs", "tsconfig.json", "tsconfig.build.json"]);
  mkdirSync(path.join(checkout, "src/cluster"), { recursive: true });
  mkdirSync(path.join(checkout, "src/ui/public"), { recursive: true });
  writeFileSync(path.join(checkout, "src/ui/public/index.html"), "<!doctype html>\n");
  writeService(1);
});

after(removeTempFolders);

test("npm start builds a missing dist/, then runs the compiled code", () => {
  assert.ok(!existsSync(path.join(checkout, "dist")));
  const start = npmStart();
  assert.equal(start.code, 0, start.output);
  assert.ok(start.compiled, `it built first:\n${start.output}`);
  assert.equal(start.ran?.generation, 1, start.output);
  assert.match(start.ran?.url ?? "", /\/dist\/src\/cluster\/main\.js$/);
});

test("npm start reuses a current dist/ without building", () => {
  const start = npmStart();
  assert.equal(start.code, 0, start.output);
  assert.ok(!start.compiled, `it did not build:\n${start.output}`);
  assert.equal(start.ran?.generation, 1, start.output);
  assert.match(start.ran?.url ?? "", /\/dist\/src\/cluster\/main\.js$/);
});

test("npm start rebuilds a dist/ older than a source file and runs the new code", () => {
  writeService(2);
  const start = npmStart();
  assert.equal(start.code, 0, start.output);
  assert.ok(start.compiled, `it rebuilt:\n${start.output}`);
  assert.equal(start.ran?.generation, 2, `the new code ran, not the stale build:\n${start.output}`);
  assert.match(start.ran?.url ?? "", /\/dist\/src\/cluster\/main\.js$/);
});

test("npm start runs nothing when the rebuild fails: not the stale build, not the sources", () => {
  writeService('"three"'); // a type error: a string where a number is declared
  const start = npmStart();
  assert.notEqual(start.code, 0, start.output);
  assert.ok(start.compiled, start.output);
  assert.match(start.output, /error TS2322/);
  assert.equal(start.ran, undefined, `nothing ran:\n${start.output}`);
  assert.ok(!existsSync(path.join(checkout, "dist")), "the failed build left no dist/ behind");
});
