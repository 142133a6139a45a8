// The server package as people get it: built and packed from a copy of this checkout (the tarball is
// kept for test/packaging/starter-project.test.ts), ready to publish, its compiled service answering
// the README's own commands, then installed from the tarball into a fresh project
// (dependencies from the registry), where `npx agenthost --help` starts nothing, the installed
// service answers the installed client, `agenthost/agent` imports, `agenthost/client` type-checks,
// and (tsx being only a development dependency) a TypeScript AGENT_PATHS file is refused in one line
// on a Node that does not strip types.
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";
import { spawnSync } from "node:child_process";
import { buildServer, projectWith, publishDryRun, removeTempFolders, ROOT, run, startBin, tempFolder, TSC } from "./packaging-helper.ts";

const FAKE = "This is a test response from the fake model.";
const VERSION = (JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string }).version;

let checkout: string;
let tarball: string;
let project: string;

before(() => {
  ({ checkout, tarball } = buildServer());
  project = projectWith([tarball]);
});

after(removeTempFolders);

test("the tarball holds the compiled service, its declarations and bin/, and no TypeScript sources or tests", () => {
  const files = new Set(run("tar", ["-tzf", tarball]).split("\n"));
  for (const file of ["bin/agenthost", "bin/maintenance", "bin/chat-ui", "bin/jobs", "bin/healthcheck", "bin/lib/entry-point.js", "bin/lib/dot-env.js", "dist/build-stamp.json", "dist/src/cluster/main.js", "dist/workers/http.js", "dist/src/client/index.js", "dist/src/client/index.d.ts", "dist/src/agents/agent.d.ts", "dist/src/ui/public/index.html", "README.md"]) {
    assert.ok(files.has(`package/${file}`), `${file} is in the tarball`);
  }
  assert.deepEqual([...files].filter((f) => /^package\/(src|test|bench|scripts)\//.test(f)), []);
});

test("ready to publish: npm publish --dry-run warns of nothing; the package ships its README, LICENSE, bin/, dist/ and docs/", () => {
  const dryRun = publishDryRun(checkout);
  assert.deepEqual(dryRun.warnings, []);
  for (const file of ["README.md", "LICENSE", "package.json", "Procfile", "bin/agenthost", "dist/src/cluster/main.js", "dist/src/agents/agent.d.ts", "docs/your-own-agent.md"]) {
    assert.ok(dryRun.files.includes(file), `${file} ships`);
  }
  assert.deepEqual(new Set(dryRun.files.map((file) => file.split("/")[0])), new Set(["README.md", "LICENSE", "package.json", "Procfile", "bin", "dist", "docs"]));
  const manifest = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as Record<string, unknown>;
  for (const field of ["description", "license", "repository", "homepage", "bugs", "keywords", "engines", "exports"]) assert.ok(manifest[field], `package.json has ${field}`);
});

/** The README's commands: the first one's environment, and the curl lines that follow "from another terminal". */
function readmeCommands(): { env: Record<string, string>; curls: string[] } {
  const readme = readFileSync(path.join(ROOT, "README.md"), "utf8");
  const first = /^((?:[A-Z_]+=\S+ )*[A-Z_]+=\S+) npm start$/m.exec(readme);
  assert.ok(first?.[1], "the README's first command");
  const env = Object.fromEntries(first[1].split(" ").map((pair) => pair.split("=") as [string, string]));
  const block = /from another terminal:\n\n```sh\n([\s\S]*?)```/.exec(readme);
  assert.ok(block?.[1], "the README's curl block");
  const curls = block[1].replace(/\\\n\s*/g, " ").split("\n").filter((line) => line.startsWith("curl "));
  assert.equal(curls.length, 2);
  return { env, curls };
}

test("the compiled service (dist/) answers the README's first command and its curls", async () => {
  const { env, curls } = readmeCommands();
  const data = tempFolder("data");
  const service = await startBin(path.join(checkout, "bin/agenthost"), { ...env, FILEDB_DB_PATH: path.join(data, "agenthost.sqlite") }, checkout);
  try {
    const forked = service.logs.find((log) => log.msg === "worker forked");
    const workerArgv = readFileSync(`/proc/${String(forked?.worker_pid)}/cmdline`, "utf8").split("\0");
    assert.ok(workerArgv.includes(path.join(checkout, "dist/workers/http.js")), `the worker runs dist/: ${workerArgv.join(" ")}`);
    assert.ok(!workerArgv.some((arg) => arg.includes("tsx")), "no tsx loader in the worker");
    const [invoke, stream] = curls.map((curl) => run("bash", ["-c", curl.replaceAll("localhost:8080", service.url.replace("http://", ""))]));
    const message = JSON.parse(invoke ?? "") as Record<string, unknown>;
    assert.equal(message.type, "ai");
    assert.equal(message.content, FAKE);
    assert.equal(message.thread_id, "demo");
    const frames = (stream ?? "").split("\n").filter((line) => line.startsWith("data: "));
    assert.deepEqual(JSON.parse(frames[0]?.slice(6) ?? ""), { type: "token", content: "This " });
    assert.equal(frames.at(-1), "data: [DONE]");
    const final = JSON.parse(frames.at(-2)?.slice(6) ?? "") as { type: string; content: { content: string } };
    assert.equal(final.type, "message");
    assert.equal(final.content.content, FAKE);
  } finally {
    assert.equal(await service.stop(), 0);
  }
});

test("installed from the tarball: --help and --version start nothing; the service answers the installed client (import and require)", async () => {
  const help = run("npx", ["--no-install", "agenthost", "--help"], { cwd: project, env: { ...process.env, PORT: "1" } });
  assert.match(help, /^Usage: agenthost/);
  assert.equal(run("npx", ["--no-install", "agenthost", "--version"], { cwd: project }).trim(), VERSION);
  assert.equal(run("npx", ["--no-install", "agenthost-maintenance", "--version"], { cwd: project }).trim(), VERSION);
  assert.equal(run("npx", ["--no-install", "agenthost-maintenance", "-v"], { cwd: project }).trim(), VERSION);
  assert.match(run("npx", ["--no-install", "agenthost-maintenance", "--help"], { cwd: project }), /^Usage: agenthost-maintenance /);
  assert.match(run("npx", ["--no-install", "agenthost-chat", "--help"], { cwd: project }), /^Usage: agenthost-chat/);

  const service = await startBin(path.join(project, "node_modules/.bin/agenthost"), { USE_FAKE_MODEL: "true", AUTH_SECRET: "change-me" }, project);
  try {
    writeFileSync(
      path.join(project, "call.mjs"),
      [
        'import { AgentClient } from "agenthost/client";',
        'const client = new AgentClient({ baseUrl: process.argv[2], authSecret: "change-me" });',
        'const message = await client.invoke("Hello", { thread_id: "packaged" });',
        "console.log(JSON.stringify(message));",
      ].join("\n"),
    );
    const message = JSON.parse(run(process.execPath, ["call.mjs", service.url], { cwd: project })) as Record<string, unknown>;
    assert.equal(message.content, FAKE);
    assert.equal(message.thread_id, "packaged");
    // CommonJS: Node 20.19+ and 22.12+ require() the ES modules.
    const required = run(process.execPath, ["-e", 'console.log(typeof require("agenthost/client").AgentClient)'], { cwd: project });
    assert.equal(required.trim(), "function");
  } finally {
    assert.equal(await service.stop(), 0);
  }
});

test("installed: agenthost/agent imports from plain Node ESM", () => {
  const script = [
    'import * as agent from "agenthost/agent";',
    "const names = ['isAgent', 'unwrapGraph', 'requestModel', 'requestModelMiddleware', 'conversationRecordMiddleware', 'modelMessages'];",
    "console.log(JSON.stringify({ functions: names.filter((name) => typeof agent[name] === 'function'), isAgent: agent.isAgent({}) }));",
  ].join("\n");
  const out = JSON.parse(run(process.execPath, ["--input-type=module", "-e", script], { cwd: project })) as Record<string, unknown>;
  assert.deepEqual(out, {
    functions: ["isAgent", "unwrapGraph", "requestModel", "requestModelMiddleware", "conversationRecordMiddleware", "modelMessages"],
    isAgent: false,
  });
});

test("installed: a TypeScript file using agenthost/client type-checks (NodeNext, strict, exactOptionalPropertyTypes)", () => {
  writeFileSync(
    path.join(project, "uses-client.ts"),
    `import { AgentClient, AgentClientError, type ChatMessage, type StreamItem } from "agenthost/client";
const client = new AgentClient({ baseUrl: "http://127.0.0.1:8080", authSecret: "change-me" });
export async function ask(text: string): Promise<string> {
  const message: ChatMessage = await client.invoke(text, { thread_id: "typed" });
  return typeof message.content === "string" ? message.content : "";
}
export async function tokens(text: string): Promise<number> {
  let count = 0;
  for await (const item of client.stream(text)) if (typeof (item satisfies StreamItem) === "string") count++;
  return count;
}
export const refused = (error: unknown): boolean => error instanceof AgentClientError && error.statusCode === 401;
`,
  );
  const compilerOptions = { strict: true, exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true, module: "NodeNext", moduleResolution: "NodeNext", target: "ES2022", lib: ["ES2022", "DOM"], types: [], noEmit: true };
  writeFileSync(path.join(project, "tsconfig.client.json"), JSON.stringify({ compilerOptions, files: ["uses-client.ts"] }));
  run(process.execPath, [TSC, "-p", "tsconfig.client.json"], { cwd: project });
  // The check can fail: the same file with a wrong type does not compile.
  writeFileSync(path.join(project, "uses-client.ts"), 'import { AgentClient } from "agenthost/client";\nexport const wrong: number = new AgentClient({ baseUrl: "x" });\n');
  const failed = spawnSync(process.execPath, [TSC, "-p", "tsconfig.client.json"], { cwd: project, encoding: "utf8" });
  assert.notEqual(failed.status, 0);
  assert.match(failed.stdout, /uses-client\.ts.*error TS2322/);
});

test("installed without tsx: a TypeScript AGENT_PATHS file on a Node that does not strip types is refused in one line", () => {
  assert.ok(!existsSync(path.join(project, "node_modules/tsx")), "tsx is not installed with the package");
  writeFileSync(path.join(project, "my-agents.ts"), 'export const echo: { name: string } = { name: "echo" };\n');
  const nodeStrips = typeof (process.features as { typescript?: unknown }).typescript === "string";
  const result = spawnSync(path.join(project, "node_modules/.bin/agenthost"), [], {
    cwd: project,
    encoding: "utf8",
    timeout: 60_000,
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      USE_FAKE_MODEL: "true",
      AUTH_SECRET: "change-me",
      HOST: "127.0.0.1",
      PORT: "0",
      METRICS_PORT: "0",
      AGENT_PATHS: JSON.stringify(["./my-agents.ts:echo"]),
      ...(nodeStrips ? { NODE_OPTIONS: "--no-experimental-strip-types" } : {}),
    },
  });
  assert.equal(result.status, 2, `${result.stdout}${result.stderr}`);
  assert.doesNotMatch(result.stdout, /worker forked/);
  const lines = result.stderr.trimEnd().split("\n");
  assert.equal(lines.length, 1, result.stderr);
  assert.match(lines[0] ?? "", /^agenthost cannot start: AGENT_PATHS entry "\.\/my-agents\.ts:echo" is a TypeScript file .* tsx is not installed; install tsx next to agenthost \(npm install tsx\), run Node 22\.18 or later, or point the entry at a compiled \.js file$/);
});
