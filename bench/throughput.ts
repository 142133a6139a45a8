/**
 * Throughput benchmark: the real service (bin/agenthost, one worker, the fake model, sync
 * durability) against two floors, side by side in one run, per backend and route:
 *
 *   - in process (bench/throughput-floor.ts): the same one-node graph on the library's saver,
 *     driven by loops inside one process, no HTTP;
 *   - behind HTTP (bench/throughput-http-floor.ts): the same graph behind the thinnest node:http
 *     server that answers the run routes, driven by the same load generator as the service.
 *
 * For each: runs per second at `--concurrency` (default 8), CPU time per run (a server's from
 * /proc: the service's primary and worker together), and the service's share of each floor's
 * throughput (goal: at least 80 %) and its CPU ratio to each (goal: at most 1.25x).
 *
 * With two or more cores, the service and the floor run on core 0 and this load generator on
 * core 1 (taskset), so the generator does not steal from what it measures. Each figure is the
 * median of `--repeat` (default 3) alternating measurements.
 *
 *   npm run bench:throughput
 *   npm run bench:throughput -- --backends=filedb --routes=invoke --seconds=5 --repeat=5
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { pgQuery } from "./postgres.ts";

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const backends = (args.backends ?? "memory,filedb,serverdb").split(",");
const routes = (args.routes ?? "invoke,stream").split(",");
const seconds = Number(args.seconds ?? 3);
const concurrency = Number(args.concurrency ?? 8);
const repeat = Number(args.repeat ?? 3);
const databaseUrl = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const WARMUP_MS = 1_500;
const TOKEN = "bench-token";
const root = path.resolve(import.meta.dirname, "..");
const pinned = os.availableParallelism() >= 2;
const CLOCK_TICKS_PER_SECOND = 100;

if (pinned) execFileSync("taskset", ["-cp", "1", String(process.pid)], { stdio: "ignore" });

/** `command` on core 0 when pinning, else as is. */
function onServiceCore(command: string, commandArgs: string[], options: Parameters<typeof spawn>[2]): ChildProcess {
  return pinned ? spawn("taskset", ["-c", "0", command, ...commandArgs], options) : spawn(command, commandArgs, options);
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

interface Measurement {
  readonly perSecond: number;
  readonly cpuMsPerRun: number;
}

/** CPU time (user + system, ms) of a process and all its descendants, from /proc. */
function treeCpuMs(pid: number): number {
  let ticks = 0;
  const visit = (p: number) => {
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${p}/stat`, "utf8");
    } catch {
      return;
    }
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    ticks += Number(fields[11]) + Number(fields[12]); // utime, stime
    for (const task of fs.readdirSync(`/proc/${p}/task`)) {
      const children = fs.readFileSync(`/proc/${p}/task/${task}/children`, "utf8").trim();
      for (const child of children ? children.split(" ") : []) visit(Number(child));
    }
  };
  visit(pid);
  return (ticks * 1_000) / CLOCK_TICKS_PER_SECOND;
}

interface Backend {
  readonly env: Record<string, string>;
  /** Where the floor keeps its checkpoints: a file, or a URL and schema. */
  readonly floorTarget: string;
  cleanup(): Promise<void>;
}

async function openBackend(kind: string): Promise<Backend> {
  if (kind === "memory") return { env: { MEMORY_BACKEND: "memory" }, floorTarget: "", cleanup: async () => {} };
  const id = `${process.pid}_${Date.now()}`;
  if (kind === "filedb") {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agenthost-throughput-"));
    return {
      env: { MEMORY_BACKEND: "filedb", FILEDB_DB_PATH: path.join(dir, "service.sqlite") },
      floorTarget: path.join(dir, "floor.sqlite"),
      cleanup: async () => fs.rmSync(dir, { recursive: true, force: true }),
    };
  }
  return {
    env: { MEMORY_BACKEND: "serverdb", DATABASE_URL: databaseUrl, SERVERDB_SCHEMA: `throughput_service_${id}` },
    floorTarget: `${databaseUrl}#throughput_floor_${id}`,
    cleanup: async () => {
      await pgQuery(databaseUrl, `DROP SCHEMA IF EXISTS "throughput_service_${id}" CASCADE`);
      await pgQuery(databaseUrl, `DROP SCHEMA IF EXISTS "throughput_floor_${id}" CASCADE`);
    },
  };
}

async function floor(kind: string, route: string, backend: Backend): Promise<Measurement> {
  const child = onServiceCore(
    process.execPath,
    ["--import", "tsx", path.join(root, "bench/throughput-floor.ts"), kind, route, String(seconds), String(concurrency), backend.floorTarget],
    { cwd: root, stdio: ["ignore", "pipe", "inherit"] },
  );
  let out = "";
  child.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
  if (code !== 0) throw new Error(`the floor exited with ${code}`);
  const { runs, seconds: elapsed, cpuMs } = JSON.parse(out) as { runs: number; seconds: number; cpuMs: number };
  return { perSecond: runs / elapsed, cpuMsPerRun: cpuMs / runs };
}

interface Server {
  readonly port: number;
  readonly pid: number;
  stop(): Promise<void>;
}

const freePort = () => 18_000 + Math.floor(Math.random() * 2_000);

function startService(backend: Backend): Promise<Server> {
  const port = freePort();
  const child = onServiceCore(path.join(root, "bin/agenthost"), [], {
    cwd: root,
    stdio: ["ignore", "ignore", "inherit"],
    env: { ...process.env, USE_FAKE_MODEL: "true", AUTH_SECRET: TOKEN, HOST: "127.0.0.1", PORT: String(port), WEB_CONCURRENCY: "1", METRICS_PORT: "0", ...backend.env },
  });
  return ready(child, port);
}

function startHttpFloor(kind: string, backend: Backend): Promise<Server> {
  const port = freePort();
  const child = onServiceCore(process.execPath, ["--import", "tsx", path.join(root, "bench/throughput-http-floor.ts"), kind, String(port), backend.floorTarget], {
    cwd: root,
    stdio: ["ignore", "ignore", "inherit"],
    env: { ...process.env, LANGCHAIN_CALLBACKS_BACKGROUND: "false" },
  });
  return ready(child, port);
}

/** The server once it answers on `port` (the service: once ready). */
async function ready(child: ChildProcess, port: number): Promise<Server> {
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

/** One request; resolves when the whole answer has arrived (a stream: at its end). */
function request(agent: http.Agent, port: number, route: string): Promise<void> {
  const body = JSON.stringify({ input: { message: "Hello! Please answer briefly." }, ...(route === "stream" ? { stream_tokens: true } : {}) });
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        agent,
        host: "127.0.0.1",
        port,
        method: "POST",
        path: `/chatbot-agent/${route}`,
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        res.on("data", () => {});
        res.on("end", () => (res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`))));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

async function load(service: Server, route: string): Promise<Measurement> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const warmEnd = performance.now() + WARMUP_MS;
  const end = warmEnd + seconds * 1_000;
  let measuring = false;
  let runs = 0;
  let cpuAtStart = 0;
  let startedAt = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        await request(agent, service.port, route);
        runs++;
        if (!measuring && performance.now() >= warmEnd) {
          measuring = true;
          runs = 0;
          cpuAtStart = treeCpuMs(service.pid);
          startedAt = performance.now();
        }
      }
    }),
  );
  const cpu = treeCpuMs(service.pid) - cpuAtStart;
  const elapsed = (performance.now() - startedAt) / 1_000;
  agent.destroy();
  if (!measuring) throw new Error("the measurement never started");
  return { perSecond: runs / elapsed, cpuMsPerRun: cpu / runs };
}

const fmt = (n: number, digits = 0) => n.toFixed(digits).padStart(6);
const share = (service: number, floorRate: number) => `${((100 * service) / floorRate).toFixed(0).padStart(3)} %`;
const ratio = (service: number, floorCpu: number) => `${(service / floorCpu).toFixed(2)}x`;

/** Drive every route once (a new process's code is still being optimised), then measure each. */
async function measureServer(server: Server, into: Map<string, Measurement[]>): Promise<void> {
  try {
    for (const route of routes) await load(server, route);
    for (const route of routes) into.get(route)!.push(await load(server, route));
  } finally {
    await server.stop();
  }
}

console.log(
  `Throughput: the service (one worker) vs the library's floor in process and behind a bare node:http server,` +
    ` c=${concurrency}, ${seconds} s per measurement, median of ${repeat}` +
    `${pinned ? "; servers and the in-process floor on core 0, load on core 1" : "; unpinned (one core)"}.` +
    `\nGoals: service >= 80 % of a floor's runs/s, CPU per run <= 1.25x the floor's.\n`,
);
console.log(`${"backend".padEnd(8)} ${"route".padEnd(6)} |   runs/s: in-process  http floor  service | service share: of in-process  of http | CPU ms/run: in-process  http floor  service | CPU ratio: to in-process  to http`);
for (const kind of backends) {
  const backend = await openBackend(kind);
  try {
    const perRoute = () => new Map<string, Measurement[]>(routes.map((r) => [r, []]));
    const floorRuns = perRoute();
    const httpFloorRuns = perRoute();
    const serviceRuns = perRoute();
    for (let i = 0; i < repeat; i++) {
      await measureServer(await startService(backend), serviceRuns);
      await measureServer(await startHttpFloor(kind, backend), httpFloorRuns);
      for (const route of routes) floorRuns.get(route)!.push(await floor(kind, route, backend));
    }
    for (const route of routes) {
      const rate = (m: Map<string, Measurement[]>) => median(m.get(route)!.map((x) => x.perSecond));
      const cpu = (m: Map<string, Measurement[]>) => median(m.get(route)!.map((x) => x.cpuMsPerRun));
      const [f, h, s] = [floorRuns, httpFloorRuns, serviceRuns];
      console.log(
        `${kind.padEnd(8)} ${route.padEnd(6)} |          ${fmt(rate(f))}      ${fmt(rate(h))}   ${fmt(rate(s))} |` +
          `                 ${share(rate(s), rate(f))}     ${share(rate(s), rate(h))} |` +
          `              ${fmt(cpu(f), 2)}      ${fmt(cpu(h), 2)}   ${fmt(cpu(s), 2)} |` +
          `                ${ratio(cpu(s), cpu(f))}     ${ratio(cpu(s), cpu(h))}`,
      );
    }
  } finally {
    await backend.cleanup();
  }
}
