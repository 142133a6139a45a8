// Writing a new agent project: the template's files, the placeholders in the README and the
// Dockerfile filled in, .env made from .env.example with a token of its own, and a package.json whose
// versions come from dist/agenthost.json (agenthost's own package.json, read when this package was
// packed: build.mjs).
import { randomBytes } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const TEMPLATE = path.join(HERE, "..", "template");
const PINNED = path.join(HERE, "..", "dist", "agenthost.json");

/** Template files npm would drop or act on under their real names (npm pack never ships a .gitignore). */
const RENAMED = { gitignore: ".gitignore", dockerignore: ".dockerignore", "env.example": ".env.example" };

/** Files whose {{NAME}}, {{IMAGE}} and {{AGENTHOST_VERSION}} are filled in. */
const FILLED = ["README.md", "Dockerfile"];

/** npm's rule for a package name (validate-npm-package-name's, for new packages). */
const PACKAGE_NAME = /^(?:@[a-z0-9-~][a-z0-9-._~]*\/)?[a-z0-9-~][a-z0-9-._~]*$/;

/** A refusal the command prints as one line (exit 2). */
export class Refusal extends Error {}

/**
 * What this package pins: agenthost's version, engines and allowed install scripts, and the
 * versions of the packages an agent project shares with it.
 * @returns {{ version: string, engines: Record<string, string>, allowScripts: Record<string, boolean>, dependencies: Record<string, string>, devDependencies: Record<string, string> }}
 */
export function pinned() {
  if (!existsSync(PINNED)) {
    throw new Refusal(`${PINNED} is missing: this copy of create-agenthost was not built (npm run build in packages/create-agenthost; npm pack builds it)`);
  }
  return JSON.parse(readFileSync(PINNED, "utf8"));
}

/** Whether `name` may name an npm package. */
export function isPackageName(name) {
  return name.length <= 214 && PACKAGE_NAME.test(name);
}

/**
 * The project's package.json. `agenthostSpec` is where agenthost comes from: its version (the
 * registry) or `file:<path>` (a tarball or folder, before it is on the registry).
 */
function packageJson(name, agenthostSpec, pins) {
  const manifest = {
    name,
    version: "0.1.0",
    private: true,
    type: "module",
    engines: pins.engines,
    scripts: {
      start: "agenthost",
      chat: "agenthost-chat",
      test: "node --import tsx --test test/*.test.ts",
      typecheck: "tsc",
    },
    dependencies: { agenthost: agenthostSpec, ...pins.dependencies },
    devDependencies: pins.devDependencies,
    allowScripts: pins.allowScripts,
  };
  return `${JSON.stringify(manifest, null, 2)}\n`;
}

/** A Docker image name from a package name: no scope, only the characters an image name allows. */
function imageName(name) {
  return name.replace(/^@[^/]*\//, "").replace(/[^a-z0-9._-]/g, "-");
}

/** Every file under `folder`, relative to it. */
function filesUnder(folder, prefix = "") {
  return readdirSync(path.join(folder, prefix), { withFileTypes: true }).flatMap((entry) => {
    const relative = path.join(prefix, entry.name);
    return entry.isDirectory() ? filesUnder(folder, relative) : [relative];
  });
}

/**
 * Write a new project into `folder` (created if missing; refused unless empty) and return the
 * files written, relative to it. `agenthost` is a tarball or folder to install agenthost from, or
 * undefined for the registry.
 * @param {{ folder: string, name: string, agenthost?: string }} options
 */
export function createProject({ folder, name, agenthost }) {
  const pins = pinned();
  if (!isPackageName(name)) {
    throw new Refusal(`"${name}" is not a valid npm package name (lowercase letters, digits, - . _ ~, an optional @scope/): pass --name`);
  }
  if (existsSync(folder)) {
    if (!statSync(folder).isDirectory()) throw new Refusal(`${folder} exists and is not a folder: choose another name`);
    if (readdirSync(folder).length > 0) throw new Refusal(`${folder} exists and is not empty: choose a new folder, or empty this one`);
  }
  let agenthostSpec = pins.version;
  if (agenthost !== undefined) {
    const source = path.resolve(agenthost);
    if (!existsSync(source)) throw new Refusal(`--agenthost ${agenthost}: there is no file or folder ${source}`);
    agenthostSpec = `file:${path.relative(path.resolve(folder), source).split(path.sep).join("/")}`;
  }

  mkdirSync(folder, { recursive: true });
  cpSync(TEMPLATE, folder, { recursive: true });
  for (const [from, to] of Object.entries(RENAMED)) renameSync(path.join(folder, from), path.join(folder, to));
  for (const file of FILLED) {
    const text = readFileSync(path.join(folder, file), "utf8")
      .replaceAll("{{NAME}}", name)
      .replaceAll("{{IMAGE}}", imageName(name))
      .replaceAll("{{AGENTHOST_VERSION}}", pins.version);
    writeFileSync(path.join(folder, file), text);
  }
  const example = readFileSync(path.join(folder, ".env.example"), "utf8");
  const token = randomBytes(24).toString("base64url");
  writeFileSync(path.join(folder, ".env"), example.replace(/^AUTH_SECRET=.*$/m, `AUTH_SECRET=${token}`), { mode: 0o600 });
  writeFileSync(path.join(folder, "package.json"), packageJson(name, agenthostSpec, pins));
  return filesUnder(folder).sort();
}
