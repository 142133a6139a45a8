// @agenthost/client as people get it: built and packed from a copy of this checkout, ready to publish
// (npm publish --dry-run), installed from the tarball into a fresh project (no dependencies come
// with it), then used against a running agenthost from plain Node ESM, from CommonJS, and from
// TypeScript compiled with tsc (NodeNext from an ES module and from a CommonJS file, and Bundler
// resolution; strict, exactOptionalPropertyTypes, library checks on, no Node types).
import assert from "node:assert/strict";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { gzipSync } from "node:zlib";
import type * as Esbuild from "esbuild";
import { after, before, test } from "node:test";
import { startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";
import { copyOfCheckout, pack, projectWith, publishDryRun, removeTempFolders, ROOT, run, runAsync, tempFolder, TSC } from "./packaging-helper.ts";

const FAKE = "This is a test response from the fake model.";

let service: RunningService;
let project: string;
let client: string;

before(async () => {
  service = await startService();
  const checkout = copyOfCheckout(["package.json", "packages/client", "src/client"]);
  client = path.join(checkout, "packages/client");
  run(process.execPath, ["build.mjs"], { cwd: client });
  project = projectWith([pack(client, tempFolder("tarballs"))]);
});

after(async () => {
  await service.close();
  removeTempFolders();
});

/** Run a script of the project with the service's URL and token; its one line of JSON output. */
async function runScript(file: string): Promise<Record<string, unknown>> {
  return JSON.parse(await runAsync(process.execPath, [file, service.url, TEST_TOKEN], project)) as Record<string, unknown>;
}

test("ready to publish: npm publish --dry-run warns of nothing, publishes public, ships README, LICENSE and dist/ only", () => {
  const dryRun = publishDryRun(client);
  assert.deepEqual(dryRun.warnings, []);
  assert.match(dryRun.publishing, /public access/);
  assert.deepEqual(new Set(dryRun.files.map((file) => file.split("/")[0])), new Set(["README.md", "LICENSE", "package.json", "dist"]));
  for (const file of ["dist/esm/index.js", "dist/esm/index.d.ts", "dist/cjs/index.js", "dist/cjs/index.d.ts", "dist/cjs/package.json"]) assert.ok(dryRun.files.includes(file), `${file} ships`);
  assert.equal(readFileSync(path.join(client, "LICENSE"), "utf8"), readFileSync(path.join(ROOT, "LICENSE"), "utf8"), "the same LICENSE as agenthost's");
  const manifest = JSON.parse(readFileSync(path.join(client, "package.json"), "utf8")) as Record<string, unknown>;
  for (const field of ["description", "license", "repository", "homepage", "bugs", "keywords", "engines", "types", "exports"]) assert.ok(manifest[field], `package.json has ${field}`);
});

test("installing the client brings nothing else", () => {
  assert.deepEqual(readdirSync(path.join(project, "node_modules")).filter((name) => !name.startsWith(".")), ["@agenthost"]);
});

test("plain Node ESM: import, invoke and stream", async () => {
  writeFileSync(
    path.join(project, "esm.mjs"),
    `import { AgentClient } from "@agenthost/client";
const client = new AgentClient({ baseUrl: process.argv[2], authSecret: process.argv[3] });
const message = await client.invoke("Hello", { thread_id: "esm" });
const kinds = [];
for await (const item of client.stream("Again", { thread_id: "esm" })) kinds.push(typeof item === "string" ? "token" : item.type);
console.log(JSON.stringify({ content: message.content, kinds: [...new Set(kinds)] }));
`,
  );
  assert.deepEqual(await runScript("esm.mjs"), { content: FAKE, kinds: ["token", "ai"] });
});

test("CommonJS: require, invoke, and the error class", async () => {
  writeFileSync(
    path.join(project, "cjs.cjs"),
    `const { AgentClient, AgentClientError } = require("@agenthost/client");
const client = new AgentClient({ baseUrl: process.argv[2], authSecret: "wrong" });
client.invoke("Hello").then(
  () => console.log(JSON.stringify({ refused: false })),
  (error) => console.log(JSON.stringify({ refused: error instanceof AgentClientError, status: error.statusCode })),
);
`,
  );
  assert.deepEqual(await runScript("cjs.cjs"), { refused: true, status: 401 });
});

const STRICT = { strict: true, exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true, skipLibCheck: false, types: [], lib: ["ES2022", "DOM"], target: "ES2022" };

test("TypeScript: NodeNext (ES module and CommonJS) and Bundler resolution compile; the compiled ES module calls the service", async () => {
  writeFileSync(
    path.join(project, "typed.ts"),
    `import { AgentClient, type ChatMessage, type StreamItem } from "@agenthost/client";
declare const process: { argv: string[] };
const client = new AgentClient({ baseUrl: process.argv[2] ?? "", authSecret: process.argv[3] ?? "" });
const message: ChatMessage = await client.invoke("Hello", { thread_id: "typed" });
const items: StreamItem[] = [];
for await (const item of client.stream("Again", { thread_id: "typed" })) items.push(item);
console.log(JSON.stringify({ content: message.content, items: items.length > 1 }));
`,
  );
  writeFileSync(
    path.join(project, "typed-cjs.cts"),
    `import client = require("@agenthost/client");
export const make = (baseUrl: string): client.AgentClient => new client.AgentClient({ baseUrl });
`,
  );
  const configs = {
    "tsconfig.nodenext.json": { compilerOptions: { ...STRICT, module: "NodeNext", moduleResolution: "NodeNext", outDir: "out" }, files: ["typed.ts", "typed-cjs.cts"] },
    "tsconfig.bundler.json": { compilerOptions: { ...STRICT, module: "ESNext", moduleResolution: "Bundler", noEmit: true }, files: ["typed.ts"] },
  };
  for (const [file, config] of Object.entries(configs)) {
    writeFileSync(path.join(project, file), JSON.stringify(config));
    run(process.execPath, [TSC, "-p", file], { cwd: project });
  }
  assert.deepEqual(await runScript("out/typed.js"), { content: FAKE, items: true });
});

test("a browser bundle: esbuild bundles the ES modules for the browser with nothing from Node", async () => {
  // esbuild is tsx's transformer, already installed with it; resolved from there.
  const tsxRequire = createRequire(createRequire(import.meta.url).resolve("tsx/package.json"));
  const esbuild = (await import(tsxRequire.resolve("esbuild"))) as typeof Esbuild;
  writeFileSync(path.join(project, "browser.js"), 'import { AgentClient } from "@agenthost/client";\nglobalThis.client = new AgentClient({ baseUrl: location.origin });\n');
  const result = await esbuild.build({
    entryPoints: [path.join(project, "browser.js")],
    absWorkingDir: project,
    bundle: true,
    platform: "browser",
    format: "esm",
    minify: true,
    write: false,
    logLevel: "silent",
  });
  assert.deepEqual(result.errors, []);
  const code = result.outputFiles[0]?.text ?? "";
  assert.doesNotMatch(code, /\bnode:|require\(/);
  assert.ok(gzipSync(code).length < 8_000, `bundle is ${gzipSync(code).length} bytes gzipped`);
});
