/**
 * Throughput benchmark: the real service (bin/agenthost, one worker, the fake model, sync
 * durability) against the library's floor, side by side in one run, per backend and route:
 *
 *   - in process (bench/throughput-floor.ts): the same one-node graph on the library's saver,
 *     driven by loops inside one process, no HTTP;
 *   - with `--http-floor`, also behind HTTP (bench/throughput-http-floor.ts): the same graph behind
 *     the thinnest node:http server that answers the run routes, driven by the same load generator
 *     as the service.
 *
 * For each: runs per second at `--concurrency` (default 8), CPU time per run (a server's from
 * /proc: the service's primary and worker together), and the service's share of each floor's
 * throughput (goal: at least 80 %) and its CPU ratio to each (goal: at most 1.25x).
 *
 * With two or more cores, the service and the floor run on core 0 and this load generator on
 * core 1 (taskset), so the generator does not steal from what it measures. One service per backend
 * is started and warmed up on every route (`--warmup` ms each, default 3,000); then each route is
 * measured `--repeat` times (default 3) for `--seconds` (default 2), the service and a new
 * in-process floor alternating, and each figure is the median. The compiled code is measured: a
 * stale dist/ is rebuilt first. Three backends take about three minutes.
 *
 *   npm run bench
 *   npm run bench -- --backends=filedb --routes=invoke --seconds=5 --repeat=5 --http-floor
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
const seconds = Number(args.seconds ?? 2);
const withHttpFloor = "http-floor" in args;
const concurrency = Number(args.concurrency ?? 8);
const repeat = Number(args.repeat ?? 3);
const databaseUrl = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
/**
 * A new server runs each route this long before anything is measured. The service has far more code
 * than the floor to optimise, and it compiles on the core it is measured on: a second of warm-up
 * leaves it measured at about twice its steady cost, three seconds per route within a few per cent.
 */
const SERVER_WARMUP_MS = Number(args.warmup ?? 3_000);
/** Before each measurement of a warm server. */
const SETTLE_MS = 500;
/** The in-process floor, a new process per measurement, warms up this long; its code is optimised well within it. */
const FLOOR_WARMUP_MS = 1_500;
const TOKEN = "bench-token";
const root = path.resolve(import.meta.dirname, "..");
const pinned = os.availableParallelism() >= 2;
const CLOCK_TICKS_PER_SECOND = 100;

if (pinned) execFileSync("taskset", ["-cp", "1", String(process.pid)], { stdio: "ignore" });
execFileSync(process.execPath, [path.join(root, "scripts/build.mjs"), "--if-stale"], { stdio: "inherit" });

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
    ["--import", "tsx", path.join(root, "bench/throughput-floor.ts"), kind, route, String(FLOOR_WARMUP_MS), String(seconds), String(concurrency), backend.floorTarget],
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

/** Drive `server` on `route` at c=`concurrency` for `warmupMs`, then measure it for `measureSeconds` (none: only warm it up). */
async function load(server: Server, route: string, warmupMs: number, measureSeconds: number): Promise<Measurement> {
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
        await request(agent, server.port, route);
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

const shareOf = (service: Measurement[], floorRuns: Measurement[]) => `${((100 * rate(service)) / rate(floorRuns)).toFixed(0)} %`;
const ratioTo = (service: Measurement[], floorRuns: Measurement[]) => `${(cpu(service) / cpu(floorRuns)).toFixed(2)}x`;
const rate = (m: Measurement[]) => median(m.map((x) => x.perSecond));
const cpu = (m: Measurement[]) => median(m.map((x) => x.cpuMsPerRun));

/** The table's columns (the http floor's when measured): a heading and the value for one backend and route. */
function columnsFor(f: Measurement[], h: Measurement[], s: Measurement[]): [string, string][] {
  const columns: [string, () => string][] = [
    ["floor runs/s", () => rate(f).toFixed(0)],
    ["http floor runs/s", () => rate(h).toFixed(0)],
    ["service runs/s", () => rate(s).toFixed(0)],
    ["share of floor", () => shareOf(s, f)],
    ["share of http", () => shareOf(s, h)],
    ["floor CPU ms/run", () => cpu(f).toFixed(2)],
    ["http floor CPU ms/run", () => cpu(h).toFixed(2)],
    ["service CPU ms/run", () => cpu(s).toFixed(2)],
    ["CPU to floor", () => ratioTo(s, f)],
    ["CPU to http", () => ratioTo(s, h)],
  ];
  return columns.filter(([heading]) => withHttpFloor || !heading.includes("http")).map(([heading, value]) => [heading, value()]);
}

console.log(
  `Throughput: the service (one worker) vs the library's floor in process${withHttpFloor ? " and behind a bare node:http server" : ""},` +
    ` c=${concurrency}, ${seconds} s per measurement, median of ${repeat}` +
    `${pinned ? "; servers and the in-process floor on core 0, load on core 1" : "; unpinned (one core)"}.` +
    `\nGoals: service >= 80 % of the floor's runs/s, CPU per run <= 1.25x the floor's.\n`,
);
let headed = false;
for (const kind of backends) {
  const backend = await openBackend(kind);
  const servers: Server[] = [];
  try {
    const service = await startService(backend);
    servers.push(service);
    const httpFloor = withHttpFloor ? await startHttpFloor(kind, backend) : undefined;
    if (httpFloor) servers.push(httpFloor);
    for (const server of servers) for (const route of routes) await load(server, route, SERVER_WARMUP_MS, 0);
    for (const route of routes) {
      const measured = { floor: [] as Measurement[], http: [] as Measurement[], service: [] as Measurement[] };
      for (let i = 0; i < repeat; i++) {
        measured.service.push(await load(service, route, SETTLE_MS, seconds));
        if (httpFloor) measured.http.push(await load(httpFloor, route, SETTLE_MS, seconds));
        measured.floor.push(await floor(kind, route, backend));
      }
      const columns = columnsFor(measured.floor, measured.http, measured.service);
      if (!headed) {
        console.log(["backend ", "route ", ...columns.map(([heading]) => heading)].join(" | "));
        headed = true;
      }
      console.log([kind.padEnd(8), route.padEnd(6), ...columns.map(([heading, value]) => value.padStart(heading.length))].join(" | "));
    }
  } finally {
    for (const server of servers) await server.stop();
    await backend.cleanup();
  }
}
