/**
 * Background runs against the same runs in the foreground, on the real service (bin/agenthost, the
 * fake model), per backend and number of workers (`npm run bench:background`):
 *
 *   - to running: on an idle service, `--latency-runs` (default 200) background runs one after
 *     another, each accepted (`POST /threads/{id}/runs`) and followed at once on the same connection
 *     (`GET /threads/{id}/runs/{run_id}/stream`); the time from sending the POST to the first event
 *     of the stream (its `metadata`, written as the run starts) is an upper bound of the time to
 *     `running`. p50 and p99; goal p50 <= 10 ms.
 *   - CPU per run: `--rounds` rounds (default 7) of `--seconds` each (default 2), alternating, of a
 *     background run with its client joining it (`POST .../runs`, then `GET .../join`) against the
 *     same run waited for in the foreground (`POST .../runs/wait`), at c=`--concurrency` (default 8);
 *     the median of each round's difference. Goal: at most 0.5 ms more.
 *   - drain: `--drain` (default 1,000) runs accepted as fast as c=8 clients can, then the time until
 *     the last has ended (agenthost_background_runs_total, scraped), against as many runs/wait at
 *     c=BACKGROUND_RUNS_PER_WORKER x workers; three times each, alternating, medians. Goal: >= 0.8x.
 *   - several workers: the foreground's CPU per run with each number of workers (the service's
 *     processes together, the primary's own share apart), against one worker. Goal: <= 1.05x.
 *
 * Each service is warmed up on both kinds of run until its CPU per run stops falling (two workers
 * each compile their own code on half the runs). The service runs on core 0 and this load
 * generator on core 1 (taskset) when there are two.
 * Memory is measured with one worker only (the memory backend refuses more).
 *
 *   npm run bench:background
 *   npm run bench:background -- --backends=filedb --workers=1,2 --drain=2000
 */
import { execFileSync } from "node:child_process";
import http from "node:http";
import path from "node:path";
import { openBackend } from "./backends.ts";
import {
  acceptBackgroundRun,
  freePort,
  load,
  median,
  pinLoadGenerator,
  pinned,
  processCpuMs,
  runOnce,
  send,
  startService,
  treeCpuMs,
  warmUntilSteady,
  type Measurement,
  type Server,
} from "./load-service.ts";

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const backends = (args.backends ?? "memory,filedb,serverdb").split(",");
const workerCounts = (args.workers ?? "1,2").split(",").map(Number);
const latencyRuns = Number(args["latency-runs"] ?? 200);
const rounds = Number(args.rounds ?? 7);
const seconds = Number(args.seconds ?? 2);
const concurrency = Number(args.concurrency ?? 8);
const drainRuns = Number(args.drain ?? 1_000);
/** BACKGROUND_RUNS_PER_WORKER, the service's default. */
const SLOTS = 4;
const WARMUP_MS = 4_000;
/** The cap on warming each kind of run until its CPU per run stops falling (two workers took about 40 s). */
const STEADY_MAX_MS = 60_000;
const root = path.resolve(import.meta.dirname, "..");

pinLoadGenerator();
execFileSync(process.execPath, [path.join(root, "scripts/build.mjs"), "--if-stale"], { stdio: "inherit" });

const quantile = (values: number[], q: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))]!;

/** Background runs one at a time on an idle service: from each POST to its stream's first event, and to its end. */
async function toRunning(server: Server): Promise<{ running: number[]; ended: number[] }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const running: number[] = [];
  const ended: number[] = [];
  for (let i = 0; i < latencyRuns; i++) {
    const start = performance.now();
    const { threadId, runId } = await acceptBackgroundRun(agent, server.port);
    let first = 0;
    await send(agent, server.port, "GET", `/threads/${threadId}/runs/${runId}/stream`, undefined, () => (first = performance.now()));
    running.push(first - start);
    ended.push(performance.now() - start);
  }
  agent.destroy();
  return { running, ended };
}

/** Runs the service has ended in the background so far, from its metrics. */
async function backgroundEnded(metricsPort: number): Promise<number> {
  const agent = new http.Agent();
  const text = await send(agent, metricsPort, "GET", "/metrics");
  agent.destroy();
  let total = 0;
  for (const line of text.split("\n")) if (line.startsWith("agenthost_background_runs_total{")) total += Number(line.slice(line.lastIndexOf(" ") + 1));
  return total;
}

interface Drain {
  readonly perSecond: number;
  readonly cpuMsPerRun: number;
}

/** `drainRuns` background runs accepted at c=8, until the last has ended (scraped every 20 ms). */
async function drainBackground(server: Server, metricsPort: number): Promise<Drain> {
  const before = await backgroundEnded(metricsPort);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  const cpu = treeCpuMs(server.pid);
  const start = performance.now();
  let accepted = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (accepted < drainRuns) {
        accepted++;
        await acceptBackgroundRun(agent, server.port);
      }
    }),
  );
  agent.destroy();
  while ((await backgroundEnded(metricsPort)) - before < drainRuns) await new Promise((resolve) => setTimeout(resolve, 20));
  const elapsed = (performance.now() - start) / 1_000;
  return { perSecond: drainRuns / elapsed, cpuMsPerRun: (treeCpuMs(server.pid) - cpu) / drainRuns };
}

/** As many runs/wait at c=`clients`, start to end. */
async function drainForeground(server: Server, clients: number): Promise<Drain> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
  const cpu = treeCpuMs(server.pid);
  const start = performance.now();
  let sent = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (sent < drainRuns) {
        sent++;
        await runOnce(agent, server.port, "wait");
      }
    }),
  );
  agent.destroy();
  const elapsed = (performance.now() - start) / 1_000;
  return { perSecond: drainRuns / elapsed, cpuMsPerRun: (treeCpuMs(server.pid) - cpu) / drainRuns };
}

interface Alongside {
  readonly foreground: Measurement;
  readonly background: Measurement;
  /** The primary's CPU per foreground run. */
  readonly primaryMsPerRun: number;
}

const lines: string[] = [];
const workerLines: string[] = [];
const ms = (value: number) => value.toFixed(2);

console.log(
  `Background runs against the same runs in the foreground: c=${concurrency}, ${rounds} rounds of ${seconds} s, drains of ${drainRuns} runs` +
    `${pinned ? "; the service on core 0, load on core 1" : "; unpinned (one core)"}.` +
    `\nGoals: to running p50 <= 10 ms; <= 0.5 ms more CPU per run than the foreground; drain >= 0.8x the foreground's runs/s; 2 workers' CPU per run <= 1.05x one's.\n`,
);
for (const kind of backends) {
  const oneWorkerCpu: number[] = [];
  for (const workers of workerCounts) {
    if (kind === "memory" && workers > 1) continue;
    const backend = await openBackend(kind);
    const metricsPort = freePort() + 2_000;
    let server: Server | undefined;
    try {
      server = await startService(root, { ...backend.env, WEB_CONCURRENCY: String(workers), METRICS_PORT: String(metricsPort), BACKGROUND_RUNS_PER_WORKER: String(SLOTS) });
      await load(server, "wait", concurrency, WARMUP_MS, 0);
      await load(server, "background", concurrency, WARMUP_MS, 0);
      // Each worker compiles its own code on its share of the runs: two take twice as long.
      await warmUntilSteady(() => load(server!, "wait", concurrency, 0, 1), STEADY_MAX_MS);
      await warmUntilSteady(() => load(server!, "background", concurrency, 0, 1), STEADY_MAX_MS);
      const latency = await toRunning(server);
      const measured: Alongside[] = [];
      for (let i = 0; i < rounds; i++) {
        const primaryBefore = processCpuMs(server.pid);
        const foregroundFirst = i % 2 === 0;
        const first = await load(server, foregroundFirst ? "wait" : "background", concurrency, 0, seconds);
        const second = await load(server, foregroundFirst ? "background" : "wait", concurrency, 0, seconds);
        const foreground = foregroundFirst ? first : second;
        const background = foregroundFirst ? second : first;
        // The primary's share: its CPU over both measurements, per run of either kind.
        const primaryMsPerRun = (processCpuMs(server.pid) - primaryBefore) / (foreground.perSecond * seconds + background.perSecond * seconds);
        measured.push({ foreground, background, primaryMsPerRun });
      }
      const drains: Array<{ background: Drain; foreground: Drain }> = [];
      for (let i = 0; i < 3; i++) {
        if (i % 2 === 0) {
          const background = await drainBackground(server, metricsPort);
          drains.push({ background, foreground: await drainForeground(server, SLOTS * workers) });
        } else {
          const foreground = await drainForeground(server, SLOTS * workers);
          drains.push({ foreground, background: await drainBackground(server, metricsPort) });
        }
      }
      const fgCpu = median(measured.map((r) => r.foreground.cpuMsPerRun));
      if (workers === 1) oneWorkerCpu.push(fgCpu);
      lines.push(
        `| ${kind} | ${workers} | ${ms(quantile(latency.running, 0.5))} / ${ms(quantile(latency.running, 0.99))} | ${ms(quantile(latency.ended, 0.5))} | ` +
          `${ms(fgCpu)} | ${ms(median(measured.map((r) => r.background.cpuMsPerRun)))} | ` +
          `${ms(median(measured.map((r) => r.background.cpuMsPerRun - r.foreground.cpuMsPerRun)))} | ` +
          `${median(drains.map((d) => d.background.perSecond)).toFixed(0)} / ${median(drains.map((d) => d.foreground.perSecond)).toFixed(0)} | ` +
          `${median(drains.map((d) => d.background.perSecond / d.foreground.perSecond)).toFixed(2)}x | ` +
          `${ms(median(drains.map((d) => d.background.cpuMsPerRun)))} / ${ms(median(drains.map((d) => d.foreground.cpuMsPerRun)))} |`,
      );
      if (oneWorkerCpu[0] !== undefined) {
        workerLines.push(
          `| ${kind} | ${workers} | ${median(measured.map((r) => r.foreground.perSecond)).toFixed(0)} | ${ms(fgCpu)} | ` +
            `${ms(median(measured.map((r) => r.primaryMsPerRun)))} | ${(fgCpu / oneWorkerCpu[0]).toFixed(2)}x |`,
        );
      }
      console.log(lines.at(-1));
    } finally {
      await server?.stop();
      await backend.cleanup();
    }
  }
}
console.log(
  "\n| backend | workers | to running p50 / p99 ms | to end p50 ms | foreground CPU ms/run | background CPU ms/run | background - foreground (median of rounds) | drain runs/s background / foreground | drain share | drain CPU ms/run background / foreground |",
);
console.log("|---|---|---|---|---|---|---|---|---|---|");
for (const line of lines) console.log(line);
console.log("\n| backend | workers | foreground runs/s | CPU ms/run (all processes) | primary's CPU ms/run | to one worker |");
console.log("|---|---|---|---|---|---|");
for (const line of workerLines) console.log(line);
