/**
 * Start-up benchmark: how long one HTTP worker takes from fork to listening, and its resident
 * memory once it listens, when the service runs its TypeScript sources through tsx (what
 * production did before dist/) and when it runs the compiled dist/ (`npm run build` first).
 * Each run starts a fresh primary with one worker (fake model, memory backend, ports 0), reads its
 * JSON log for "worker forked" and "listening", then stops it with SIGTERM. Modes alternate; the
 * figures are medians of `--repeat` (default 5) runs.
 *
 *   npm run build && npm run bench:startup
 *   npm run bench:startup -- --repeat=9
 *   npm run bench:startup -- --baseline=/tmp/old   # also an older checkout's sources through tsx
 *
 * `--baseline` names a folder holding another version's sources (`git archive <commit> | tar -x`,
 * with node_modules linked to this one's) to compare against.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const repeat = Number(args.repeat ?? 5);
const root = path.resolve(import.meta.dirname, "..");
const tsx = import.meta.resolve("tsx");
const MODES: Record<string, readonly string[]> = {
  ...(args.baseline ? { baseline: ["--import", tsx, path.join(path.resolve(args.baseline), "src/cluster/main.ts")] } : {}),
  tsx: ["--import", tsx, path.join(root, "src/cluster/main.ts")],
  compiled: [path.join(root, "dist/src/cluster/main.js")],
};
type Mode = string;

interface Sample {
  /** Primary spawned → worker listening. */
  readonly totalMs: number;
  /** Worker forked → worker listening. */
  readonly workerMs: number;
  readonly workerRssMb: number;
}

function rssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]);
  return kb / 1024;
}

function startOnce(mode: Mode): Promise<Sample> {
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, [...(MODES[mode] ?? [])], {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      USE_FAKE_MODEL: "true",
      AUTH_SECRET: "bench",
      MEMORY_BACKEND: "memory",
      WEB_CONCURRENCY: "1",
      HOST: "127.0.0.1",
      PORT: "0",
      METRICS_PORT: "0",
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    let pending = "";
    let forkedAt = 0;
    let workerPid = 0;
    child.on("exit", (code) => reject(new Error(`${mode}: the service exited (${code}) before listening`)));
    child.stdout.on("data", (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) {
        const log = JSON.parse(line) as { msg?: string; worker_pid?: number };
        if (log.msg === "worker forked") {
          forkedAt = performance.now();
          workerPid = log.worker_pid ?? 0;
        }
        if (log.msg === "listening") {
          const now = performance.now();
          const sample = { totalMs: now - spawnedAt, workerMs: now - forkedAt, workerRssMb: rssMb(workerPid) };
          child.removeAllListeners("exit");
          child.on("exit", () => resolve(sample));
          child.kill("SIGTERM");
        }
      }
    });
  });
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

if (!fs.existsSync(MODES.compiled?.[0] ?? "")) {
  console.error("dist/ is missing: run npm run build first");
  process.exit(1);
}
const samples: Record<Mode, Sample[]> = Object.fromEntries(Object.keys(MODES).map((mode) => [mode, []]));
for (let i = 0; i < repeat; i++) {
  for (const mode of Object.keys(MODES)) samples[mode]?.push(await startOnce(mode));
}
console.log(`worker start-up, one worker, medians of ${repeat} (Node ${process.version})`);
console.log("mode       primary→listening  fork→listening  worker RSS");
for (const mode of Object.keys(MODES)) {
  const s = samples[mode] ?? [];
  const total = median(s.map((x) => x.totalMs)) / 1000;
  const worker = median(s.map((x) => x.workerMs)) / 1000;
  const rss = median(s.map((x) => x.workerRssMb));
  console.log(`${mode.padEnd(10)} ${total.toFixed(2).padStart(14)} s ${worker.toFixed(2).padStart(13)} s ${rss.toFixed(0).padStart(8)} MB`);
}
