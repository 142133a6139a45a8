// create-agenthost as people get it: built and packed from a copy of this checkout, ready to publish,
// run with npx from its tarball to create a project that installs agenthost from the server
// package's tarball (the one server-package.test.ts packed, when the sources have not changed since);
// the project installs (dependencies from the registry), type-checks, passes its own test, serves its
// agents with the fake model through its `npm start` command, and serves them again laid out as its
// Dockerfile puts them in agenthost's image.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseEnv } from "node:util";
import { after, before, describe, test } from "node:test";
import { waitFor } from "../helpers/raw-http.ts";
import { copyOfCheckout, npmInstall, pack, publishDryRun, removeTempFolders, ROOT, run, serverTarball, startBin, tempFolder, type StartedService } from "./packaging-helper.ts";

const FAKE = "This is a test response from the fake model.";
const AGENTHOST = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as {
  version: string;
  engines: Record<string, string>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const PROJECT_FILES = [".dockerignore", ".env", ".env.example", ".gitignore", "Dockerfile", "README.md", "package.json", "src/agents.ts", "src/tools.ts", "test/agents.test.ts", "tsconfig.json"];

let starter: string;

before(() => {
  starter = path.join(copyOfCheckout(["package.json", "packages/create-agenthost"]), "packages/create-agenthost");
  run(process.execPath, ["build.mjs"], { cwd: starter });
});

after(removeTempFolders);

/** Files under `folder`, relative to it, leaving out node_modules. */
function filesUnder(folder: string, prefix = ""): string[] {
  return readdirSync(path.join(folder, prefix), { withFileTypes: true }).flatMap((entry) => {
    const relative = path.posix.join(prefix, entry.name);
    if (entry.name === "node_modules") return [];
    return entry.isDirectory() ? filesUnder(folder, relative) : [relative];
  });
}

test("ready to publish: npm publish --dry-run warns of nothing; the starter ships its README, LICENSE, code, template and pins", () => {
  const dryRun = publishDryRun(starter);
  assert.deepEqual(dryRun.warnings, []);
  const template = filesUnder(path.join(ROOT, "packages/create-agenthost/template")).map((file) => `template/${file}`);
  assert.deepEqual(dryRun.files, ["LICENSE", "README.md", "bin/create-agenthost.js", "dist/agenthost.json", "lib/create-project.js", "package.json", ...template].sort());
  assert.equal(readFileSync(path.join(starter, "LICENSE"), "utf8"), readFileSync(path.join(ROOT, "LICENSE"), "utf8"), "the same LICENSE as agenthost's");
  const manifest = JSON.parse(readFileSync(path.join(starter, "package.json"), "utf8")) as Record<string, unknown>;
  for (const field of ["description", "license", "repository", "homepage", "bugs", "keywords", "engines", "bin"]) assert.ok(manifest[field], `package.json has ${field}`);
  assert.equal(manifest.version, AGENTHOST.version, "create-agenthost is released with the agenthost it pins");
});

test("docs/your-own-agent.md shows the starter's code as it is, and agenthost's own version and pins", () => {
  const doc = readFileSync(path.join(ROOT, "docs/your-own-agent.md"), "utf8");
  const template = path.join(ROOT, "packages/create-agenthost/template");
  const blocks = [...doc.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]);
  assert.deepEqual(blocks, ["src/tools.ts", "src/agents.ts", "test/agents.test.ts"].map((file) => readFileSync(path.join(template, file), "utf8")));
  const dockerfile = readFileSync(path.join(template, "Dockerfile"), "utf8");
  const shown = /```dockerfile\n([\s\S]*?)```/.exec(doc)?.[1] ?? "";
  assert.match(shown, new RegExp(`^\\s*FROM agenthost:${AGENTHOST.version.replaceAll(".", "\\.")}$`, "m"));
  for (const line of shown.split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("FROM "))) assert.ok(dockerfile.includes(line), `the Dockerfile has ${line}`);
  for (const [, version] of doc.matchAll(/agenthost[-@: ](\d+\.\d+\.\d+)/g)) assert.equal(version, AGENTHOST.version);
  const pins = { ...AGENTHOST.devDependencies, ...AGENTHOST.dependencies };
  const packages = doc.slice(doc.indexOf("### The packages"), doc.indexOf("###", doc.indexOf("### The packages") + 4));
  const table = packages.split("\n").filter((line) => line.startsWith("| "));
  const names = ["@langchain/core", "@langchain/langgraph", "langchain", "zod", "typescript", "tsx", "@types/node"];
  for (const name of names) {
    const row = table.find((line) => line.split(" | ")[0]?.includes(`\`${name}\``));
    assert.ok(row?.includes(`\`${pins[name]}\``), `the table gives ${name} ${pins[name]}: ${row}`);
    assert.ok(doc.includes(` ${name}@${pins[name]}`), `the install command names ${name}@${pins[name]}`);
  }
});

test("the starter's --help and --version; a folder that is not empty, a name npm refuses, a missing tarball or no folder: exit 2, one line, nothing written", () => {
  const bin = path.join(starter, "bin/create-agenthost.js");
  const starterRun = (args: string[], cwd: string) => spawnSync(process.execPath, [bin, ...args], { cwd, encoding: "utf8", timeout: 30_000 });
  const help = starterRun(["--help"], starter);
  assert.equal(help.status, 0);
  assert.match(help.stdout, new RegExp(`^Usage: create-agenthost <folder>[\\s\\S]*agenthost ${AGENTHOST.version.replaceAll(".", "\\.")}`));
  assert.equal(starterRun(["-v"], starter).stdout.trim(), AGENTHOST.version);

  const parent = tempFolder("refusals");
  mkdirSync(path.join(parent, "taken"));
  writeFileSync(path.join(parent, "taken/notes.txt"), "mine\n");
  const refusals: Array<[string[], RegExp]> = [
    [["taken"], /^create-agenthost: taken exists and is not empty: choose a new folder, or empty this one$/],
    [["My Agent"], /^create-agenthost: "My Agent" is not a valid npm package name .*: pass --name$/],
    [["fresh", "--agenthost", "./nowhere.tgz"], /^create-agenthost: --agenthost \.\/nowhere\.tgz: there is no file or folder \/.*nowhere\.tgz$/],
    [[], /^create-agenthost: name the folder to create: create-agenthost <folder> \(--help for more\)$/],
    [["fresh", "--nmae", "x"], /^create-agenthost: Unknown option '--nmae'/],
  ];
  for (const [args, message] of refusals) {
    const result = starterRun(args, parent);
    assert.equal(result.status, 2, `${args.join(" ")}: ${result.stderr}`);
    assert.equal(result.stdout, "");
    assert.equal(result.stderr.trimEnd().split("\n").length, 1, result.stderr);
    assert.match(result.stderr.trimEnd(), message);
  }
  assert.deepEqual(readdirSync(parent).sort(), ["taken"]);
  assert.deepEqual(readdirSync(path.join(parent, "taken")), ["notes.txt"]);
});

describe("a project the starter made", () => {
  let project: string;
  let agenthostTarball: string;

  before(() => {
    // The README's commands ("In your own repository"): pack both, run the starter from its tarball, install.
    const block = /### In your own repository[\s\S]*?```sh\n([\s\S]*?)```/.exec(readFileSync(path.join(ROOT, "README.md"), "utf8"))?.[1];
    const [packing, creating, using] = block?.trimEnd().split("\n") ?? [];
    assert.equal(packing, "npm pack && npm pack ./packages/create-agenthost");
    assert.equal(using, "cd ../my-agent && npm install && npm test && npm start");
    agenthostTarball = serverTarball();
    const starterTarball = pack(starter, tempFolder("tarballs"));
    // What the two npm packs write: the README names those files.
    const named = { [`./${path.basename(starterTarball)}`]: starterTarball, [`./${path.basename(agenthostTarball)}`]: agenthostTarball, "../my-agent": "my-agent" };
    const [command, ...args] = (creating ?? "").split(" ");
    assert.equal(command, "npx");
    for (const arg of args.filter((a) => a.startsWith("."))) assert.ok(arg in named, `the README's ${arg} is what npm pack writes (${Object.keys(named).join(", ")})`);
    const parent = tempFolder("starter");
    run("npx", ["--yes", ...args.map((arg) => named[arg] ?? arg)], { cwd: parent });
    project = path.join(parent, "my-agent");
    npmInstall(project);
  });

  test("the project: its files, agenthost from the tarball, the shared packages at agenthost's own versions, .env with a token of its own and kept out of git", () => {
    assert.deepEqual(filesUnder(project).filter((file) => file !== "package-lock.json").sort(), [...PROJECT_FILES].sort());
    const manifest = JSON.parse(readFileSync(path.join(project, "package.json"), "utf8")) as {
      name: string;
      engines: unknown;
      scripts: Record<string, string>;
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    assert.equal(manifest.name, "my-agent");
    assert.deepEqual(manifest.engines, AGENTHOST.engines);
    assert.deepEqual(Object.keys(manifest.scripts).sort(), ["chat", "start", "test", "typecheck"]);
    assert.equal(manifest.dependencies.agenthost, `file:${path.relative(project, agenthostTarball)}`);
    for (const name of ["@langchain/core", "@langchain/langgraph", "langchain", "zod"]) assert.equal(manifest.dependencies[name], AGENTHOST.dependencies[name], name);
    for (const name of ["@types/node", "tsx", "typescript"]) assert.equal(manifest.devDependencies[name], AGENTHOST.devDependencies[name], name);
    // One copy of LangChain's core: the agents' and the service's.
    assert.ok(!existsSync(path.join(project, "node_modules/agenthost/node_modules/@langchain/core")));

    for (const file of ["README.md", "Dockerfile"]) assert.doesNotMatch(readFileSync(path.join(project, file), "utf8"), /\{\{/, `${file} has every placeholder filled`);
    assert.match(readFileSync(path.join(project, "Dockerfile"), "utf8"), new RegExp(`^ARG AGENTHOST_IMAGE=agenthost:${AGENTHOST.version}$`, "m"));
    const example = parseEnv(readFileSync(path.join(project, ".env.example"), "utf8"));
    const env = parseEnv(readFileSync(path.join(project, ".env"), "utf8"));
    assert.equal(example.AUTH_SECRET, "change-me");
    assert.match(env.AUTH_SECRET ?? "", /^[\w-]{32}$/);
    assert.deepEqual({ ...env, AUTH_SECRET: "change-me" }, example);
    assert.deepEqual(JSON.parse(env.AGENT_PATHS ?? ""), ["./src/agents.ts:assistant", "./src/agents.ts:chat"]);
    const ignored = readFileSync(path.join(project, ".gitignore"), "utf8").split("\n");
    for (const entry of [".env", "node_modules/"]) assert.ok(ignored.includes(entry), `.gitignore names ${entry}`);
  });

  test("installed: the type check passes, and its settings refuse syntax Node cannot strip", () => {
    run("npm", ["run", "typecheck"], { cwd: project });
    // The project's settings on one file of its own (a whole check takes 10 s more).
    writeFileSync(path.join(project, "src/colour.ts"), "export enum Colour { Red }\n");
    writeFileSync(path.join(project, "tsconfig.colour.json"), JSON.stringify({ extends: "./tsconfig.json", include: ["src/colour.ts"] }));
    let failed;
    try {
      failed = spawnSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.colour.json"], { cwd: project, encoding: "utf8", timeout: 120_000 });
    } finally {
      for (const file of ["src/colour.ts", "tsconfig.colour.json"]) rmSync(path.join(project, file));
    }
    assert.notEqual(failed.status, 0);
    assert.match(failed.stdout, /colour\.ts.*error TS1294/);
  });

  test("installed: npm test runs the agents with a scripted model and passes", () => {
    // Without this runner's NODE_TEST_CONTEXT, which would make the project's runner report to this one.
    const { NODE_TEST_CONTEXT: _, ...env } = process.env;
    const out = run("npm", ["test"], { cwd: project, env });
    // TAP off a terminal on Node 20 and 22, the spec reporter's ℹ on later ones.
    assert.match(out, /^[#ℹ] pass 3$/m);
    assert.match(out, /^[#ℹ] fail 0$/m);
  });

  /** `/info` with the token: the agents' names and the default one. */
  async function agentsOf(service: StartedService, token: string): Promise<{ names: string[]; default_agent: string }> {
    const response = await fetch(`${service.url}/info`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(response.status, 200);
    const info = (await response.json()) as { agents: Array<{ key: string }>; default_agent: string };
    return { names: info.agents.map((agent) => agent.key), default_agent: info.default_agent };
  }

  test("served by its npm start (agenthost, reading .env: the fake model, its token, only its agents): the README's curls reach both", async () => {
    const { start } = (JSON.parse(readFileSync(path.join(project, "package.json"), "utf8")) as { scripts: { start: string } }).scripts;
    assert.equal(start, "agenthost");
    const service = await startBin(path.join(project, "node_modules/.bin/agenthost"), {}, project);
    try {
      const token = parseEnv(readFileSync(path.join(project, ".env"), "utf8")).AUTH_SECRET ?? "";
      assert.deepEqual(await agentsOf(service, token), { names: ["assistant", "chat"], default_agent: "assistant" });
      const refused = await fetch(`${service.url}/invoke`, { method: "POST", headers: { authorization: "Bearer change-me" }, body: "{}" });
      assert.equal(refused.status, 401, "the token is .env's own");

      const readme = readFileSync(path.join(project, "README.md"), "utf8");
      const block = /From another terminal:\n\n```sh\n([\s\S]*?)```/.exec(readme)?.[1];
      assert.ok(block, "the README's curl block");
      const lines = block.replace(/\\\n\s*/g, " ").replaceAll("localhost:8080", service.url.replace("http://", "")).split("\n");
      const [invoked, streamed] = lines
        .filter((line) => line.startsWith("curl "))
        .map((curl) => run("bash", ["-c", [...lines.filter((line) => /^[A-Z]+=/.test(line)), curl].join("\n")], { cwd: project }));
      const message = JSON.parse(invoked ?? "") as Record<string, unknown>;
      assert.deepEqual([message.type, message.content, message.thread_id], ["ai", FAKE, "first"]);
      const frames = (streamed ?? "").split("\n").filter((line) => line.startsWith("data: "));
      assert.equal(frames.at(-1), "data: [DONE]");
      const final = JSON.parse(frames.at(-2)?.slice(6) ?? "") as { type: string; content: { content: string; thread_id: string } };
      assert.deepEqual([final.type, final.content.content, final.content.thread_id], ["message", FAKE, "second"]);
      const ran = () => service.logs.filter((log) => log.msg === "request" && log.status === 200 && log.agent !== undefined).map((log) => log.agent);
      await waitFor(() => ran().length >= 2, "the request log lines of both runs");
      assert.deepEqual(ran(), ["assistant", "chat"]);
    } finally {
      assert.equal(await service.stop(), 0);
    }
  });

  /** The `COPY <from> <to>` and `ENV` settings of a Dockerfile (continued lines joined, single quotes as Docker reads them). */
  function dockerfileSteps(text: string): { copies: Array<[string, string]>; env: Record<string, string> } {
    const lines = text.replace(/\\\n\s*/g, " ").split("\n").filter((line) => !line.startsWith("#"));
    const copies = lines.flatMap((line) => {
      const copy = /^COPY (\S+) (\S+)$/.exec(line);
      return copy ? [[copy[1]!, copy[2]!] as [string, string]] : [];
    });
    const env: Record<string, string> = {};
    for (const line of lines.filter((l) => l.startsWith("ENV "))) {
      for (const [, name, quoted, bare] of line.matchAll(/([A-Z_]+)=(?:'([^']*)'|(\S+))/g)) env[name!] = quoted ?? bare!;
    }
    return { copies, env };
  }

  /**
   * The project's node_modules laid out as agenthost's image has them: agenthost's own files in the
   * folder itself (so "agenthost/agent" is agenthost naming itself) and its dependencies, agenthost's
   * nested ones over the others, beside them in node_modules.
   */
  function imageLayout(): string {
    const app = tempFolder("image");
    const installed = path.join(project, "node_modules/agenthost");
    for (const entry of ["package.json", "bin", "dist"]) cpSync(path.join(installed, entry), path.join(app, entry), { recursive: true });
    for (const modules of [path.join(project, "node_modules"), path.join(installed, "node_modules")]) {
      if (!existsSync(modules)) continue;
      for (const name of readdirSync(modules)) {
        if (name === "agenthost" || name.startsWith(".")) continue;
        const packages = name.startsWith("@") ? readdirSync(path.join(modules, name)).map((inner) => `${name}/${inner}`) : [name];
        for (const entry of packages) {
          mkdirSync(path.dirname(path.join(app, "node_modules", entry)), { recursive: true });
          rmSync(path.join(app, "node_modules", entry), { force: true });
          symlinkSync(path.join(modules, entry), path.join(app, "node_modules", entry));
        }
      }
    }
    return app;
  }

  test("in agenthost's image as the Dockerfile lays it out: its COPY and AGENT_PATHS serve both agents", async () => {
    const { copies, env } = dockerfileSteps(readFileSync(path.join(project, "Dockerfile"), "utf8"));
    assert.deepEqual(Object.keys(env).sort(), ["AGENT_PATHS", "BUILTIN_AGENTS", "DEFAULT_AGENT"]);
    const app = imageLayout();
    for (const [from, to] of copies) cpSync(path.join(project, from), path.join(app, to), { recursive: true });
    assert.ok(!existsSync(path.join(app, "node_modules/agenthost")), "no agenthost package in the image's node_modules");
    // Node 20 here runs the .ts files through tsx (linked from the project); the image's Node 24 strips
    // their types itself, which the type check's erasableSyntaxOnly keeps possible.
    const service = await startBin(path.join(app, "bin/agenthost"), { ...env, USE_FAKE_MODEL: "true", AUTH_SECRET: "change-me" }, app);
    try {
      assert.deepEqual(await agentsOf(service, "change-me"), { names: ["assistant", "chat"], default_agent: "assistant" });
      for (const route of ["/invoke", "/chat/invoke"]) {
        const response = await fetch(`${service.url}${route}`, { method: "POST", headers: { authorization: "Bearer change-me" }, body: JSON.stringify({ input: { message: "Hello" } }) });
        assert.equal(response.status, 200, route);
        assert.equal(((await response.json()) as { content: string }).content, FAKE);
      }
    } finally {
      assert.equal(await service.stop(), 0);
    }
  });
});
