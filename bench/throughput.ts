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
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort, load as loadServer, median, onServiceCore, pinLoadGenerator, pinned, ready, startService, type Measurement, type Server } from "./load-service.ts";
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
 * than the floor to optimise, and it compiles on the core it is measured on: measured in a new
 * process after 1.5 s of warm-up, it cost twice what it costs warm, after 3 s 1.2 times. Here every
 * route is driven this long before the first measurement; 6 s measured the same as 3 s.
 */
const SERVER_WARMUP_MS = Number(args.warmup ?? 3_000);
/** Before each measurement of a warm server. */
const SETTLE_MS = 500;
/** The in-process floor, a new process per measurement, warms up this long; its code is optimised well within it. */
const FLOOR_WARMUP_MS = 1_500;
const root = path.resolve(import.meta.dirname, "..");

pinLoadGenerator();
execFileSync(process.execPath, [path.join(root, "scripts/build.mjs"), "--if-stale"], { stdio: "inherit" });

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

function startHttpFloor(kind: string, backend: Backend): Promise<Server> {
  const port = freePort();
  const child = onServiceCore(process.execPath, ["--import", "tsx", path.join(root, "bench/throughput-http-floor.ts"), kind, String(port), backend.floorTarget], {
    cwd: root,
    stdio: ["ignore", "ignore", "inherit"],
    env: { ...process.env, LANGCHAIN_CALLBACKS_BACKGROUND: "false" },
  });
  return ready(child, port);
}

const load = (server: Server, route: string, warmupMs: number, measureSeconds: number) => loadServer(server, route, concurrency, warmupMs, measureSeconds);

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
    const service = await startService(root, backend.env);
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
