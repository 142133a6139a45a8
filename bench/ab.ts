/**
 * A/B of two builds of the service: the package at `a` and the one at `b` (two checkouts, each
 * with its dependencies and, to measure compiled code, a current dist/), one worker each, started
 * at once on the same core and warmed up; then loaded in turns, one second each, which of them goes
 * first alternating, for `--slices` rounds (default 20). Prints each one's CPU per run (the mean
 * of its slices) and the ratio B/A: of the means, and the median of the rounds' ratios.
 *
 * On a shared machine the speed of a core drifts by 10 % and more within minutes, which hides a
 * change of a few per cent between two benchmark runs; the drift over one round moves both builds
 * alike. The same build against itself measures within 2–3 %.
 *
 *   npm run bench:ab -- --a=/path/to/checkout-before --b=. [--route=invoke] [--backend=memory] [--slices=20] [--workers=1]
 *
 * `--workers=2` starts each service with two workers (both on the service's core), to compare what
 * the second worker costs per run.
 *
 * `--backend=filedb` gives each its own SQLite file in a temporary folder, `--backend=serverdb` its own
 * PostgreSQL schema (bench/backends.ts).
 */
import path from "node:path";
import { openBackend } from "./backends.ts";
import { load, median, pinLoadGenerator, startService, type Server } from "./load-service.ts";

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
if (!args.a || !args.b) throw new Error("name the two packages: --a=<path> --b=<path>");
const roots = [path.resolve(args.a), path.resolve(args.b)] as const;
const route = args.route ?? "invoke";
const backend = args.backend ?? "memory";
const slices = Number(args.slices ?? 20);
const workers = Number(args.workers ?? 1);
const CONCURRENCY = 8;
const WARMUP_MS = 3_000;
const SLICE_MS = 1_000;

pinLoadGenerator();
// Each build its own place: a SQLite file, or a PostgreSQL schema (their run queues must not meet).
const places = await Promise.all(roots.map(() => openBackend(backend)));

const servers: Server[] = [];
try {
  for (const [i, root] of roots.entries()) servers.push(await startService(root, { ...places[i]!.env, WEB_CONCURRENCY: String(workers) }));
  for (const server of servers) await load(server, route, CONCURRENCY, WARMUP_MS, 0);
  const perBuild: number[][] = servers.map(() => []);
  const ratios: number[] = [];
  for (let round = 0; round < slices; round++) {
    const perRun: number[] = [];
    for (const i of round % 2 === 0 ? [0, 1] : [1, 0]) {
      perRun[i] = (await load(servers[i]!, route, CONCURRENCY, 0, SLICE_MS / 1000)).cpuMsPerRun;
      perBuild[i]!.push(perRun[i]!);
    }
    ratios.push(perRun[1]! / perRun[0]!);
  }
  const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
  console.log(`${route} on ${backend}, ${workers} worker(s), c=${CONCURRENCY}, ${slices} rounds of ${SLICE_MS / 1000} s each`);
  for (const [i, root] of roots.entries()) console.log(`${"AB"[i]}: ${mean(perBuild[i]!).toFixed(3)} ms CPU per run (mean of the slices)  ${root}`);
  console.log(`B/A: ${(mean(perBuild[1]!) / mean(perBuild[0]!)).toFixed(3)} of the means, ${median(ratios).toFixed(3)} median of the rounds`);
} finally {
  for (const server of servers) await server.stop();
  for (const place of places) await place.cleanup();
}
