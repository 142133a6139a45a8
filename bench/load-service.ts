/**
 * Servers under load for the benchmarks: start one on core 0 (when the machine has two), drive a
 * route of it at a fixed concurrency from this process, and read what it cost from /proc: runs per
 * second and CPU time per run of the server's process and all its descendants (the service's
 * primary and worker together). Used by throughput.ts and ab.ts.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";

export const TOKEN = "bench-token";
export const pinned = os.availableParallelism() >= 2;
const CLOCK_TICKS_PER_SECOND = 100;

/** Keep this process (the load generator) off the servers' core. */
export function pinLoadGenerator(): void {
  if (pinned) execFileSync("taskset", ["-cp", "1", String(process.pid)], { stdio: "ignore" });
}

/** `command` on core 0 when pinning, else as is. */
export function onServiceCore(command: string, commandArgs: string[], options: Parameters<typeof spawn>[2]): ChildProcess {
  return pinned ? spawn("taskset", ["-c", "0", command, ...commandArgs], options) : spawn(command, commandArgs, options);
}

export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

export interface Measurement {
  readonly perSecond: number;
  readonly cpuMsPerRun: number;
}

/** CPU time (user + system, ms) of one process alone, from /proc; 0 once it is gone. */
export function processCpuMs(pid: number): number {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return 0;
  }
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1_000) / CLOCK_TICKS_PER_SECOND; // utime, stime
}

/** Every descendant of a process (children, theirs, …), from /proc; none once it is gone. */
export function descendantPids(pid: number): number[] {
  let tasks: string[];
  try {
    tasks = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const children = tasks.flatMap((task) => {
    try {
      return fs.readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").trim().split(" ").filter(Boolean).map(Number);
    } catch {
      return [];
    }
  });
  return children.flatMap((child) => [child, ...descendantPids(child)]);
}

/** CPU time (user + system, ms) of a process and all its descendants, from /proc. */
export function treeCpuMs(pid: number): number {
  return [pid, ...descendantPids(pid)].reduce((sum, each) => sum + processCpuMs(each), 0);
}

export interface Server {
  readonly port: number;
  readonly pid: number;
  stop(): Promise<void>;
}

export const freePort = () => 18_000 + Math.floor(Math.random() * 2_000);

/**
 * The service of the package at `root` (its bin/agenthost: the compiled code when its dist/ is
 * current), one worker, the fake model, on a free port, with `env` added; once it is ready.
 */
export function startService(root: string, env: Record<string, string>): Promise<Server> {
  const port = freePort();
  const child = onServiceCore(`${root}/bin/agenthost`, [], {
    cwd: root,
    stdio: ["ignore", "ignore", "inherit"],
    env: { ...process.env, USE_FAKE_MODEL: "true", AUTH_SECRET: TOKEN, HOST: "127.0.0.1", PORT: String(port), WEB_CONCURRENCY: "1", METRICS_PORT: "0", ...env },
  });
  return ready(child, port);
}

/** The server once it answers on `port` (the service: once ready). */
export async function ready(child: ChildProcess, port: number): Promise<Server> {
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  for (let attempt = 0; ; attempt++) {
    if (child.exitCode !== null) throw new Error("the server exited while starting");
    const status = await new Promise<number>((resolve) => {
      http.get({ port, host: "127.0.0.1", path: "/health/ready" }, (res) => resolve(res.statusCode ?? 0)).on("error", () => resolve(0)).end();
    });
    if (status === 200) break;
    if (attempt > 600) throw new Error("the server did not become ready");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // The pid of `taskset` is the primary's: taskset execs the command.
  return {
    port,
    pid: child.pid!,
    stop: async () => {
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/**
 * The LangGraph Platform routes a benchmark may drive, each a run on a new thread (`if_not_exists`),
 * and the service's own route that does the same work (PLATFORM_COUNTERPARTS).
 */
const PLATFORM_RUNS: Record<string, { route: "wait" | "stream"; streamMode?: string[] }> = {
  wait: { route: "wait" },
  values: { route: "stream", streamMode: ["values"] },
  "messages-tuple": { route: "stream", streamMode: ["messages-tuple"] },
};
export const PLATFORM_COUNTERPARTS: Record<string, string> = { wait: "invoke", values: "stream", "messages-tuple": "stream" };
export const isPlatformRoute = (route: string) => route in PLATFORM_RUNS;

const QUESTION = "Hello! Please answer briefly.";

/** Where a run of `route` goes and what it sends: the service's own `/chatbot-agent/<route>`, or a Platform run. */
function runRequest(route: string): { path: string; body: string } {
  const platform = PLATFORM_RUNS[route];
  if (!platform) {
    return { path: `/chatbot-agent/${route}`, body: JSON.stringify({ input: { message: QUESTION }, ...(route === "stream" ? { stream_tokens: true } : {}) }) };
  }
  return {
    path: `/threads/${randomUUID()}/runs/${platform.route}`,
    body: JSON.stringify({
      assistant_id: "chatbot-agent",
      input: { messages: [{ role: "user", content: QUESTION }] },
      if_not_exists: "create",
      ...(platform.streamMode ? { stream_mode: platform.streamMode } : {}),
    }),
  };
}

/**
 * One request to the service; resolves with its answer's text once the whole answer has arrived (a
 * stream: at its end), rejects on a status outside 2xx. `first` is told when its first bytes arrive.
 */
export function send(agent: http.Agent, port: number, method: string, path: string, body?: string, first?: () => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const headers: http.OutgoingHttpHeaders = { authorization: `Bearer ${TOKEN}` };
    if (body !== undefined) Object.assign(headers, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
    const req = http.request({ agent, host: "127.0.0.1", port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => {
        if (chunks.length === 0) first?.();
        chunks.push(chunk);
      });
      const ok = res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300;
      res.on("end", () => (ok ? resolve(Buffer.concat(chunks).toString()) : reject(new Error(`${method} ${path}: status ${res.statusCode}`))));
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** A background run on a new thread (`POST /threads/{id}/runs`); its thread and run ids once accepted. */
export async function acceptBackgroundRun(agent: http.Agent, port: number): Promise<{ threadId: string; runId: string }> {
  const threadId = randomUUID();
  const body = JSON.stringify({ assistant_id: "chatbot-agent", input: { messages: [{ role: "user", content: QUESTION }] }, if_not_exists: "create" });
  const { run_id: runId } = JSON.parse(await send(agent, port, "POST", `/threads/${threadId}/runs`, body)) as { run_id: string };
  return { threadId, runId };
}

/**
 * One run of `route`; resolves when the whole answer has arrived (a stream: at its end). The route
 * `background` is a background run and its client waiting for it: accepted, then joined
 * (`GET /threads/{id}/runs/{run_id}/join`, which answers the thread's values once it has ended).
 */
export async function runOnce(agent: http.Agent, port: number, route: string): Promise<void> {
  if (route === "background") {
    const { threadId, runId } = await acceptBackgroundRun(agent, port);
    await send(agent, port, "GET", `/threads/${threadId}/runs/${runId}/join`);
    return;
  }
  const { path, body } = runRequest(route);
  await send(agent, port, "POST", path, body);
}

/** Drive `server` on `route` at c=`concurrency` for `warmupMs`, then measure it for `measureSeconds` (none: only warm it up). */
export async function load(server: Server, route: string, concurrency: number, warmupMs: number, measureSeconds: number): Promise<Measurement> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const warmEnd = performance.now() + warmupMs;
  const end = warmEnd + measureSeconds * 1_000;
  let measuring = false;
  let runs = 0;
  let cpuAtStart = 0;
  let startedAt = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        await runOnce(agent, server.port, route);
        runs++;
        if (!measuring && performance.now() >= warmEnd) {
          measuring = true;
          runs = 0;
          cpuAtStart = treeCpuMs(server.pid);
          startedAt = performance.now();
        }
      }
    }),
  );
  const cpu = treeCpuMs(server.pid) - cpuAtStart;
  const elapsed = (performance.now() - startedAt) / 1_000;
  agent.destroy();
  if (measureSeconds > 0 && !measuring) throw new Error("the measurement never started");
  return { perSecond: runs / elapsed, cpuMsPerRun: cpu / runs };
}


/** Slices in a row that must not improve on the best CPU per run so far, by at least this much, for a side to be steady. */
const STEADY_SLICES = 3;
const STEADY_IMPROVEMENT = 0.03;

/**
 * Drive one side in one-second slices until its CPU per run stops falling. A process compiles the
 * code it runs on the core it is measured on: on a shared core that took more than 10 s, and the
 * service's first slices after a fixed 3 s of warm-up cost twice what its later ones did; with two
 * workers each compiles its own, on half the runs, and took about 40 s. Steady: STEADY_SLICES
 * slices in a row that improve on the best so far by less than STEADY_IMPROVEMENT (or `maxMs` in all).
 */
export async function warmUntilSteady(measure: () => Promise<Measurement>, maxMs = 20_000): Promise<void> {
  const end = performance.now() + maxMs;
  let best = Infinity;
  let still = 0;
  while (still < STEADY_SLICES && performance.now() < end) {
    const { cpuMsPerRun } = await measure();
    still = cpuMsPerRun < best * (1 - STEADY_IMPROVEMENT) ? 0 : still + 1;
    best = Math.min(best, cpuMsPerRun);
  }
}
