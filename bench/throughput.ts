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
 * throughput and its CPU ratio to each (goals: at least 100 % on SQLite and PostgreSQL and 95 % on
 * memory, with CPU per run at most 1.05x the floor's on memory).
 *
 * With two or more cores, the service and the floor run on core 0 and this load generator on
 * core 1 (taskset), so the generator does not steal from what it measures. One service per backend
 * is started and warmed up on every route (`--warmup` ms each, default 3,000), and one in-process
 * floor per route, kept up. Before a route is measured, each side is driven until its CPU per run
 * stops falling (warmUntilSteady). Each route is then measured in `--rounds` rounds (default 9)
 * of `--seconds` each (default 1), the service and the floor back to back, who goes first
 * alternating. A figure is the median over the rounds; a share or a ratio is the median of the
 * rounds' own, each taken from two measurements a second apart: on a shared machine a core's speed
 * drifts by tens of per cent within minutes, which moved a ratio taken from measurements far apart
 * (the floor in a new process after the service) between 1.05x and 1.58x from run to run. The
 * compiled code is measured: a stale dist/ is rebuilt first. Three backends take about four minutes.
 *
 * Then, per backend, the LangGraph Platform routes against the service's own (`--platform`, default
 * wait,values,messages-tuple): `runs/wait` against `/invoke`, `runs/stream` with `values` and with
 * `messages-tuple` against `/stream`, each a run on a new thread, on the same service, in rounds the
 * same way (goal: at least 95 % of the own route's runs/s).
 *
 *   npm run bench
 *   npm run bench -- --backends=filedb --routes=invoke --seconds=2 --rounds=15 --http-floor --platform=wait
 */
import { execFileSync } from "node:child_process";
import path from "node:path";
import readline from "node:readline";
import {
  freePort,
  isPlatformRoute,
  load as loadServer,
  median,
  onServiceCore,
  pinLoadGenerator,
  pinned,
  PLATFORM_COUNTERPARTS,
  ready,
  startService,
  warmUntilSteady,
  type Measurement,
  type Server,
} from "./load-service.ts";
import { openBackend, type Backend } from "./backends.ts";

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const backends = (args.backends ?? "memory,filedb,serverdb").split(",");
const routes = (args.routes ?? "invoke,stream").split(",");
/** The Platform routes measured against the service's own counterpart (PLATFORM_COUNTERPARTS); `--platform=` for none. */
const platformRoutes = (args.platform ?? "wait,values,messages-tuple").split(",").filter(Boolean);
const seconds = Number(args.seconds ?? 1);
const withHttpFloor = "http-floor" in args;
const concurrency = Number(args.concurrency ?? 8);
const rounds = Number(args.rounds ?? 9);
/** A new server runs each route this long (ms) before anything else: the first compilation of its code. */
const SERVER_WARMUP_MS = Number(args.warmup ?? 3_000);
const root = path.resolve(import.meta.dirname, "..");

pinLoadGenerator();
execFileSync(process.execPath, [path.join(root, "scripts/build.mjs"), "--if-stale"], { stdio: "inherit" });

/** The in-process floor for one route: a process that stays up, warm, and measures when asked (throughput-floor.ts). */
interface InProcessFloor {
  measure(ms: number): Promise<Measurement>;
  stop(): Promise<void>;
}

function startFloor(kind: string, route: string, backend: Backend): InProcessFloor {
  const child = onServiceCore(
    process.execPath,
    ["--import", "tsx", path.join(root, "bench/throughput-floor.ts"), kind, route, String(concurrency), backend.floorTarget],
    { cwd: root, stdio: ["pipe", "pipe", "inherit"] },
  );
  const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
  const lines = readline.createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  return {
    async measure(ms) {
      child.stdin!.write(`${ms}\n`);
      const answer = await lines.next();
      if (answer.done) throw new Error(`the floor exited with ${await exited}`);
      const { runs, seconds: elapsed, cpuMs } = JSON.parse(answer.value) as { runs: number; seconds: number; cpuMs: number };
      return { perSecond: runs / elapsed, cpuMsPerRun: cpuMs / runs };
    },
    async stop() {
      child.stdin!.end();
      const code = await exited;
      if (code !== 0) throw new Error(`the floor exited with ${code}`);
    },
  };
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

/** One round: each server and the floor measured back to back. */
interface Round {
  readonly floor: Measurement;
  readonly http?: Measurement;
  readonly service: Measurement;
}

/** The median over the rounds of one figure (a ratio: of each round's own ratio). */
const over = (rounds: Round[], figure: (round: Round) => number) => median(rounds.map(figure));
/** The middle half of the rounds' ratios (first to third quartile): how far one run's median can be trusted. */
function spread(rounds: Round[], ratio: (round: Round) => number, format: (value: number) => string): string {
  const sorted = rounds.map(ratio).sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.round(q * (sorted.length - 1))]!;
  return `${format(median(sorted))} (${format(at(0.25))}-${format(at(0.75))})`;
}
const percent = (ratio: number) => `${(100 * ratio).toFixed(0)} %`;
const times = (ratio: number) => `${ratio.toFixed(2)}x`;

/** The table's columns (the http floor's when measured): a heading and the value for one backend and route. */
function columnsFor(rounds: Round[]): [string, string][] {
  const columns: [string, () => string][] = [
    ["floor runs/s", () => over(rounds, (r) => r.floor.perSecond).toFixed(0)],
    ["http floor runs/s", () => over(rounds, (r) => r.http!.perSecond).toFixed(0)],
    ["service runs/s", () => over(rounds, (r) => r.service.perSecond).toFixed(0)],
    ["share of floor (middle half)", () => spread(rounds, (r) => r.service.perSecond / r.floor.perSecond, percent)],
    ["share of http (middle half)", () => spread(rounds, (r) => r.service.perSecond / r.http!.perSecond, percent)],
    ["floor CPU ms/run", () => over(rounds, (r) => r.floor.cpuMsPerRun).toFixed(2)],
    ["http floor CPU ms/run", () => over(rounds, (r) => r.http!.cpuMsPerRun).toFixed(2)],
    ["service CPU ms/run", () => over(rounds, (r) => r.service.cpuMsPerRun).toFixed(2)],
    ["CPU to floor (middle half)", () => spread(rounds, (r) => r.service.cpuMsPerRun / r.floor.cpuMsPerRun, times)],
    ["CPU to http (middle half)", () => spread(rounds, (r) => r.service.cpuMsPerRun / r.http!.cpuMsPerRun, times)],
  ];
  return columns.filter(([heading]) => withHttpFloor || !heading.includes("http")).map(([heading, value]) => [heading, value()]);
}

console.log(
  `Throughput: the service (one worker) vs the library's floor in process${withHttpFloor ? " and behind a bare node:http server" : ""},` +
    ` c=${concurrency}, medians of ${rounds} rounds of ${seconds} s each (the service and the floor back to back)` +
    `${pinned ? "; servers and the in-process floor on core 0, load on core 1" : "; unpinned (one core)"}.` +
    `\nGoals: service >= 100 % of the floor's runs/s on SQLite and PostgreSQL, >= 95 % on memory with CPU per run <= 1.05x the floor's.\n`,
);
/** One round of a Platform route against its own counterpart, on one service. */
interface PlatformRound {
  readonly own: Measurement;
  readonly platform: Measurement;
}
const platformLines: string[] = [];

/** Measure each Platform route against the service's own counterpart, in rounds, back to back. */
async function measurePlatform(kind: string, service: Server): Promise<void> {
  for (const route of platformRoutes) {
    if (!isPlatformRoute(route)) throw new Error(`--platform: unknown route ${route} (${Object.keys(PLATFORM_COUNTERPARTS).join(", ")})`);
    const own = PLATFORM_COUNTERPARTS[route]!;
    await load(service, route, SERVER_WARMUP_MS, 0);
    await warmUntilSteady(() => load(service, route, 0, 1));
    await warmUntilSteady(() => load(service, own, 0, 1));
    const measured: PlatformRound[] = [];
    for (let i = 0; i < rounds; i++) {
      if (i % 2 === 0) {
        const ownRun = await load(service, own, 0, seconds);
        measured.push({ own: ownRun, platform: await load(service, route, 0, seconds) });
      } else {
        const platform = await load(service, route, 0, seconds);
        measured.push({ platform, own: await load(service, own, 0, seconds) });
      }
    }
    const middleHalf = (ratio: (round: PlatformRound) => number, format: (value: number) => string) => {
      const sorted = measured.map(ratio).sort((a, b) => a - b);
      const at = (q: number) => sorted[Math.round(q * (sorted.length - 1))]!;
      return `${format(median(sorted))} (${format(at(0.25))}-${format(at(0.75))})`;
    };
    const name = route === "wait" ? "runs/wait" : `runs/stream ${route}`;
    platformLines.push(
      `| ${kind} | ${name} | /${own} | ${median(measured.map((r) => r.platform.perSecond)).toFixed(0)} | ${median(measured.map((r) => r.own.perSecond)).toFixed(0)} | ` +
        `${middleHalf((r) => r.platform.perSecond / r.own.perSecond, percent)} | ${median(measured.map((r) => r.platform.cpuMsPerRun)).toFixed(2)} | ` +
        `${median(measured.map((r) => r.own.cpuMsPerRun)).toFixed(2)} | ${middleHalf((r) => r.platform.cpuMsPerRun / r.own.cpuMsPerRun, times)} |`,
    );
  }
}

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
      const inProcess = startFloor(kind, route, backend);
      const measured: Round[] = [];
      try {
        const measure = {
          service: () => load(service, route, 0, seconds),
          http: () => (httpFloor ? load(httpFloor, route, 0, seconds) : Promise.resolve(undefined)),
          floor: () => inProcess.measure(seconds * 1_000),
        };
        await warmUntilSteady(() => load(service, route, 0, 1));
        if (httpFloor) await warmUntilSteady(() => load(httpFloor, route, 0, 1));
        await warmUntilSteady(() => inProcess.measure(1_000));
        for (let i = 0; i < rounds; i++) {
          // Who goes first alternates, so a drift of the machine's speed within a round favours neither side.
          if (i % 2 === 0) {
            const service = await measure.service();
            const http = await measure.http();
            measured.push({ service, http, floor: await measure.floor() });
          } else {
            const floor = await measure.floor();
            const http = await measure.http();
            measured.push({ floor, http, service: await measure.service() });
          }
        }
      } finally {
        await inProcess.stop();
      }
      const columns = columnsFor(measured);
      if (!headed) {
        console.log(["backend ", "route ", ...columns.map(([heading]) => heading)].join(" | "));
        headed = true;
      }
      console.log([kind.padEnd(8), route.padEnd(6), ...columns.map(([heading, value]) => value.padStart(heading.length))].join(" | "));
    }
    await measurePlatform(kind, service);
  } finally {
    for (const server of servers) await server.stop();
    await backend.cleanup();
  }
}
if (platformLines.length > 0) {
  console.log(`\nThe LangGraph Platform routes against the service's own (same service, c=${concurrency}, medians of ${rounds} rounds; goal: >= 95 % of the own route's runs/s)`);
  console.log("| backend | Platform route | own route | Platform runs/s | own runs/s | share of own (middle half) | Platform CPU ms/run | own CPU ms/run | CPU to own (middle half) |");
  console.log("|---|---|---|---|---|---|---|---|---|");
  for (const line of platformLines) console.log(line);
}
