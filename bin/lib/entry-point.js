// Shared by the files in bin/: which code to run (the compiled dist/ or, in a source checkout whose
// dist/ is missing or older than its sources, the TypeScript through tsx), and the package version.
// Plain JavaScript: it runs before anything is compiled.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { loadDotEnv } from "./dot-env.js";

/** The package's root folder (the checkout, or node_modules/agenthost when installed). */
export const PACKAGE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** Written by scripts/build.mjs when a build starts; its time is the build's. */
export const BUILD_STAMP = path.join(PACKAGE_ROOT, "dist", "build-stamp.json");

/** What a build compiles: a change to any of these makes dist/ stale. */
const BUILD_INPUTS = ["src", "workers", "tsconfig.json", "tsconfig.build.json"];

/** The version in package.json. */
export function packageVersion() {
  return JSON.parse(readFileSync(path.join(PACKAGE_ROOT, "package.json"), "utf8")).version;
}

/** A source checkout holds src/; an installed package and the image hold dist/ only. */
export function isSourceCheckout() {
  return existsSync(path.join(PACKAGE_ROOT, "src", "cluster", "main.ts"));
}

function newestChange(target) {
  const stats = statSync(target, { throwIfNoEntry: false });
  if (!stats) return 0;
  if (!stats.isDirectory()) return stats.mtimeMs;
  let newest = stats.mtimeMs;
  for (const entry of readdirSync(target)) newest = Math.max(newest, newestChange(path.join(target, entry)));
  return newest;
}

/** The build's start time, or undefined when dist/ was never built. */
function builtAt() {
  if (!existsSync(BUILD_STAMP)) return undefined;
  return JSON.parse(readFileSync(BUILD_STAMP, "utf8")).startedAt;
}

/**
 * Whether dist/ holds the current code: outside a source checkout, whenever it exists; in a checkout,
 * when no file under src/ and workers/ (nor a tsconfig) changed since the last build started.
 */
export function distIsCurrent() {
  const startedAt = builtAt();
  if (startedAt === undefined) return false;
  if (!isSourceCheckout()) return true;
  return BUILD_INPUTS.every((input) => newestChange(path.join(PACKAGE_ROOT, input)) < startedAt);
}

/**
 * Run one entry module in this process, `entry` named without extension from the package root
 * (`src/cluster/main`): the compiled `dist/<entry>.js` when dist/ is current, else the TypeScript
 * source through tsx's loader (a source checkout with its development dependencies). First the
 * working directory's .env is read into the environment (./dot-env.js; one line on stderr names the
 * file when there is one). Nothing is printed on stdout either way: scripts read these commands' output.
 */
export async function runEntry(entry) {
  loadDotEnv();
  if (distIsCurrent()) {
    await import(pathToFileURL(path.join(PACKAGE_ROOT, "dist", `${entry}.js`)).href);
    return;
  }
  if (!isSourceCheckout()) {
    process.stderr.write(`agenthost: ${path.join(PACKAGE_ROOT, "dist")} is missing; this package was not built\n`);
    process.exit(1);
  }
  let tsx;
  try {
    tsx = await import("tsx/esm/api");
  } catch (error) {
    if (error?.code !== "ERR_MODULE_NOT_FOUND") throw error;
    process.stderr.write("agenthost: dist/ is missing or older than the sources, and tsx (a development dependency) is not installed: install the development dependencies (npm ci) and run npm run build\n");
    process.exit(1);
  }
  tsx.register();
  await import(pathToFileURL(path.join(PACKAGE_ROOT, `${entry}.ts`)).href);
}

/**
 * Answer `--help` and `--version` (also `-h`, `-v`) without loading anything else. Returns true when
 * it answered: the caller then exits.
 */
export function answeredHelpOrVersion(argv, helpText) {
  if (argv.includes("--version") || argv.includes("-v")) {
    process.stdout.write(`${packageVersion()}\n`);
    return true;
  }
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(helpText);
    return true;
  }
  return false;
}
