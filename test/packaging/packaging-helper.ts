// Shared by the packaging tests: copies of the checkout to build and pack in (so a build never
// replaces the dist/ that other tests' bin/agenthost may be running), the server package built and
// packed once for every test file that needs its tarball, commands, `npm publish --dry-run`, and a
// service started from a bin/ script and read through its JSON log.
import { spawn, spawnSync, type SpawnSyncOptions } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../cluster/cluster-helper.ts";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const TSC = path.join(ROOT, "node_modules/typescript/bin/tsc");

const created: string[] = [];

/** A fresh folder under the system's temporary folder, removed by removeTempFolders. */
export function tempFolder(label: string): string {
  const folder = mkdtempSync(path.join(tmpdir(), `agenthost-${label}-`));
  created.push(folder);
  return folder;
}

/** Remove every folder tempFolder made in this process. */
export function removeTempFolders(): void {
  for (const folder of created.splice(0)) rmSync(folder, { recursive: true, force: true });
}

/**
 * A copy of these paths of the checkout (files or folders, relative to it) in a fresh temporary
 * folder, with node_modules linked to the checkout's so builds there find TypeScript.
 */
export function copyOfCheckout(paths: readonly string[]): string {
  const copy = tempFolder("checkout");
  for (const entry of paths) cpSync(path.join(ROOT, entry), path.join(copy, entry), { recursive: true });
  symlinkSync(realpathSync(path.join(ROOT, "node_modules")), path.join(copy, "node_modules"));
  return copy;
}

/**
 * Run a command to completion; its stdout, or an error with its output when it fails. The timeout
 * catches a hang within the runner's 300 s per file: a build of src/ took more than 110 s on a 2-core
 * machine busy with the rest of the suite.
 */
export function run(command: string, args: readonly string[], options: SpawnSyncOptions = {}): string {
  const result = spawnSync(command, args, { encoding: "utf8", timeout: 240_000, ...options });
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(" ")} exited ${result.status}${result.signal ? ` (${result.signal})` : ""}:\n${String(result.stdout)}\n${String(result.stderr)}`);
  }
  return String(result.stdout);
}

/**
 * Run a command to completion without blocking this process (which may be serving it); its stdout,
 * or an error with its output when it fails.
 */
export async function runAsync(command: string, args: readonly string[], cwd: string): Promise<string> {
  const child = spawn(command, args, { cwd, stdio: ["ignore", "pipe", "pipe"], timeout: 60_000 });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
  if (code !== 0) throw new Error(`${command} ${args.join(" ")} exited ${code}:\n${stdout}\n${stderr}`);
  return stdout;
}

/** `npm pack` of the package in `folder` into `destination`, without its prepack build; the tarball's path. */
export function pack(folder: string, destination: string): string {
  const out = run("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", destination], { cwd: folder });
  const [{ filename }] = JSON.parse(out) as [{ filename: string }];
  return path.join(destination, filename);
}

/** Every file the server package is built and packed from, relative to the checkout. */
const SERVER_SOURCES = ["package.json", "README.md", "LICENSE", "Procfile", "tsconfig.json", "tsconfig.build.json", "bin", "src", "workers", "docs", "scripts/build.mjs"];

/**
 * Packed server tarballs, one folder per hash of the sources they were built from, kept between
 * test files (each runs in a process of its own) and runs: a build takes about 100 s.
 */
const TARBALLS = path.join(tmpdir(), "agenthost-packaging-tarballs");

/** Files under `entry` (a file or a folder of `folder`), relative to `folder`, in a stable order. */
function filesOf(folder: string, entry: string): string[] {
  const full = path.join(folder, entry);
  if (!statSync(full).isDirectory()) return [entry];
  return readdirSync(full).sort().flatMap((name) => filesOf(folder, path.join(entry, name)));
}

/** A hash of the names and contents of the server package's sources in `folder`. */
function serverSourcesHash(folder: string): string {
  const hash = createHash("sha256");
  for (const file of SERVER_SOURCES.flatMap((entry) => filesOf(folder, entry))) {
    hash.update(`${file}\0`).update(readFileSync(path.join(folder, file))).update("\0");
  }
  return hash.digest("hex").slice(0, 24);
}

/** The cached tarball packed from sources with this hash, if there is one. */
function cachedTarball(hash: string): string | undefined {
  const folder = path.join(TARBALLS, hash);
  const tarball = existsSync(folder) ? readdirSync(folder).find((name) => name.endsWith(".tgz")) : undefined;
  return tarball === undefined ? undefined : path.join(folder, tarball);
}

/** Keep a copy of `tarball` for these sources (written aside, then renamed: readers see all or nothing); drop copies a day old. */
function keepTarball(hash: string, tarball: string): void {
  mkdirSync(TARBALLS, { recursive: true });
  for (const name of readdirSync(TARBALLS)) {
    const old = path.join(TARBALLS, name);
    if (Date.now() - statSync(old).mtimeMs > 24 * 3600_000) rmSync(old, { recursive: true, force: true });
  }
  if (cachedTarball(hash)) return;
  const aside = mkdtempSync(path.join(TARBALLS, `.${hash}-`));
  cpSync(tarball, path.join(aside, path.basename(tarball)));
  try {
    renameSync(aside, path.join(TARBALLS, hash));
  } catch {
    rmSync(aside, { recursive: true, force: true }); // another test file kept the same tarball first
  }
}

/**
 * The server package built in a copy of the checkout (its compiled service in `checkout`/dist) and
 * packed without its prepack build; the tarball is also kept for serverTarball.
 */
export function buildServer(): { checkout: string; tarball: string } {
  const checkout = copyOfCheckout(SERVER_SOURCES);
  run(process.execPath, ["scripts/build.mjs"], { cwd: checkout });
  const tarball = pack(checkout, tempFolder("tarballs"));
  keepTarball(serverSourcesHash(checkout), tarball);
  return { checkout, tarball };
}

/** The server package's tarball for the checkout's current sources: the one kept by an earlier build, or a new build's. */
export function serverTarball(): string {
  return cachedTarball(serverSourcesHash(ROOT)) ?? buildServer().tarball;
}

export interface DryRun {
  /** The files the package would ship, sorted. */
  readonly files: string[];
  /** npm's warnings, but the one every dry run off the registry prints (not logged in). */
  readonly warnings: string[];
  /** What npm says it would publish to, with which tag and access. */
  readonly publishing: string;
}

/** `npm publish --dry-run` of the package in `folder`, without its prepack build. */
export function publishDryRun(folder: string): DryRun {
  const result = spawnSync("npm", ["publish", "--dry-run", "--ignore-scripts", "--json"], { cwd: folder, encoding: "utf8", timeout: 120_000 });
  if (result.status !== 0) throw new Error(`npm publish --dry-run in ${folder} exited ${result.status}:\n${result.stdout}\n${result.stderr}`);
  const [report] = Object.values(JSON.parse(result.stdout) as Record<string, { files: Array<{ path: string }> }>);
  const lines = result.stderr.split("\n");
  return {
    files: (report?.files ?? []).map((file) => file.path).sort(),
    warnings: lines.filter((line) => line.startsWith("npm warn") && !/requires you to be logged in/.test(line)),
    publishing: lines.find((line) => line.includes("Publishing to")) ?? "",
  };
}

/**
 * `npm install` in `project`, without install scripts, taking what npm's cache holds without asking
 * the registry again (the rest comes from the registry): 30 s where asking took 100 s, on a busy
 * 2-core machine.
 */
export function npmInstall(project: string, packages: readonly string[] = []): void {
  run("npm", ["install", "--no-audit", "--no-fund", "--ignore-scripts", "--prefer-offline", ...packages], { cwd: project });
}

/** A fresh project (an ES module package) with these tarballs installed. */
export function projectWith(tarballs: readonly string[]): string {
  const project = tempFolder("project");
  run("npm", ["init", "-y"], { cwd: project });
  run("npm", ["pkg", "set", "type=module"], { cwd: project });
  npmInstall(project, tarballs);
  return project;
}

export interface StartedService {
  readonly url: string;
  readonly logs: ReadonlyArray<Record<string, unknown>>;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

/**
 * Start an agenthost bin script with one worker and ports of its own, plus `env` (the fake model
 * when it says so), and resolve once its worker listens. The environment holds nothing else from the test runner.
 */
export async function startBin(bin: string, env: Record<string, string>, cwd: string): Promise<StartedService> {
  const [port, metricsPort] = [await freePort(), await freePort()];
  const child = spawn(bin, [], {
    cwd,
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: process.env.HOME ?? cwd,
      WEB_CONCURRENCY: "1",
      HOST: "127.0.0.1",
      ...env,
      PORT: String(port),
      METRICS_PORT: String(metricsPort),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const logs: Array<Record<string, unknown>> = [];
  let stderr = "";
  let pending = "";
  const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${bin} did not listen within 60 s:\n${stderr}`)), 60_000);
    void exited.then((code) => reject(new Error(`${bin} exited ${code} before listening:\n${stderr}`)));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.on("data", (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) {
        const log = JSON.parse(line) as Record<string, unknown>;
        logs.push(log);
        if (log.msg === "listening") {
          clearTimeout(timer);
          resolve();
        }
      }
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    logs,
    stop: async () => {
      child.kill("SIGTERM");
      return exited;
    },
  };
}
