// How the compiled service loads an AGENT_PATHS TypeScript file (src/agents/typescript-loader.ts):
// through tsx when this Node does not strip types and tsx is installed; refused in one line naming
// the fix when tsx is not (resolution hooks make tsx missing); through Node's own type stripping when
// Node has it, with no tsx at all. The loader runs compiled (transpiled to JavaScript here, as the
// build emits it), in a child process without tsx's loader, as it runs in production.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import ts from "typescript";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const FORBID_TSX = new URL("../helpers/forbid-tsx.mjs", import.meta.url).href;
/** Node's own type stripping, off: the path of a Node that has none (Node 20, 22 before 22.18). */
const NO_STRIPPING = typeof (process.features as { typescript?: unknown }).typescript === "string" ? ["--no-experimental-strip-types"] : [];
const NODE_STRIPS = NO_STRIPPING.length > 0;

let folder: string;

before(() => {
  // Inside the checkout, so that `import("tsx/esm/api")` from the loader finds the installed tsx.
  mkdirSync(path.join(ROOT, "test/artifacts"), { recursive: true });
  folder = mkdtempSync(path.join(ROOT, "test/artifacts/typescript-loader-"));
  const source = readFileSync(path.join(ROOT, "src/agents/typescript-loader.ts"), "utf8");
  const compiled = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true },
  });
  writeFileSync(path.join(folder, "typescript-loader.js"), compiled.outputText);
  // Type annotations: plain Node without a TypeScript loader cannot import this file.
  writeFileSync(path.join(folder, "agents.ts"), 'const name: string = "typed";\nexport const echo: { name: string } = { name };\n');
  writeFileSync(path.join(folder, "agents.js"), 'export const echo = { name: "plain" };\n');
});

after(() => rmSync(folder, { recursive: true, force: true }));

interface Outcome {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * In a child process running the compiled loader: the primary's check, then the worker's preparation
 * and import of the AGENT_PATHS entry `./<file>:echo`; prints the export, or the refusal on one line.
 */
function loadInChild(file: string, nodeFlags: readonly string[]): Outcome {
  const entry = `./${file}:echo`;
  const script = `
const { checkTypeScriptAgents, prepareToImport } = await import(${JSON.stringify(pathToFileURL(path.join(folder, "typescript-loader.js")).href)});
try {
  await checkTypeScriptAgents([${JSON.stringify(entry)}], ${JSON.stringify(folder)});
  await prepareToImport(${JSON.stringify(entry)}, ${JSON.stringify(path.join(folder, file))});
} catch (error) {
  process.stderr.write(error.name + ": " + error.message + "\\n");
  process.exit(2);
}
const { echo } = await import(${JSON.stringify(pathToFileURL(path.join(folder, file)).href)});
console.log(JSON.stringify(echo));
`;
  const child = spawnSync(process.execPath, [...nodeFlags, "--input-type=module", "-e", script], { cwd: folder, encoding: "utf8", timeout: 60_000 });
  return { code: child.status, stdout: child.stdout, stderr: child.stderr };
}

test("a Node that does not strip types loads a TypeScript agent file through tsx when tsx is installed", () => {
  const outcome = loadInChild("agents.ts", NO_STRIPPING);
  assert.equal(outcome.code, 0, outcome.stderr);
  assert.deepEqual(JSON.parse(outcome.stdout), { name: "typed" });
});

test("without tsx, such a Node refuses the TypeScript file in one line naming the fix", () => {
  const outcome = loadInChild("agents.ts", [...NO_STRIPPING, "--import", FORBID_TSX]);
  assert.equal(outcome.code, 2, outcome.stdout);
  assert.equal(outcome.stdout, "");
  const lines = outcome.stderr.trimEnd().split("\n");
  assert.equal(lines.length, 1, outcome.stderr);
  assert.match(
    lines[0]!,
    /^TypeScriptAgentRefusal: AGENT_PATHS entry "\.\/agents\.ts:echo" is a TypeScript file and nothing here can load it: Node v[\d.]+ does not strip types \(22\.18\+ and 23\.6\+ do\) and tsx is not installed; install tsx next to agenthost \(npm install tsx\), run Node 22\.18 or later, or point the entry at a compiled \.js file$/,
  );
});

test("without tsx, a JavaScript agent file loads as before", () => {
  const outcome = loadInChild("agents.js", [...NO_STRIPPING, "--import", FORBID_TSX]);
  assert.equal(outcome.code, 0, outcome.stderr);
  assert.deepEqual(JSON.parse(outcome.stdout), { name: "plain" });
});

test("a Node that strips types loads a TypeScript agent file by itself, with no tsx", { skip: !NODE_STRIPS && `Node ${process.version} does not strip types` }, () => {
  const outcome = loadInChild("agents.ts", ["--import", FORBID_TSX]);
  assert.equal(outcome.code, 0, outcome.stderr);
  assert.deepEqual(JSON.parse(outcome.stdout), { name: "typed" });
});
