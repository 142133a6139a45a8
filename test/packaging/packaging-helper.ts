// Shared by the packaging tests: copies of the checkout to build and pack in (so a build never
// replaces the dist/ that other tests' bin/agenthost may be running), commands, and a service
// started from a bin/ script and read through its JSON log.
import { spawn, spawnSync, type SpawnSyncOptions } from "node:child_process";
import { cpSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from "node:fs";
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

/** A fresh project (an ES module package) with these tarballs installed. */
export function projectWith(tarballs: readonly string[]): string {
  const project = tempFolder("project");
  run("npm", ["init", "-y"], { cwd: project });
  run("npm", ["pkg", "set", "type=module"], { cwd: project });
  run("npm", ["install", "--no-audit", "--no-fund", "--ignore-scripts", ...tarballs], { cwd: project });
  return project;
}

export interface StartedService {
  readonly url: string;
  readonly logs: ReadonlyArray<Record<string, unknown>>;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

/**
 * Start an agenthost bin script with the fake model, one worker and ports of its own, plus `env`,
 * and resolve once its worker listens. The environment holds nothing else from the test runner.
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
