/**
 * agenthost against LangGraph's own JS server (`langgraphjs dev`, in memory), side by side in one
 * run: the same one-node graph and the same fake model on both (bench/peer-servers.ts), agenthost
 * with one worker on the memory backend. For each mode (bench/peer-load.ts: agenthost's own
 * `/invoke` and `/stream`, and the Platform routes both serve: `runs/wait`, `runs/stream` with
 * `values`, with `messages-tuple`) and each concurrency (1, 8, 64): runs per second, p50 and p99
 * latency, CPU time per run of each server's whole process tree (/proc), and the ratios
 * agenthost / peer. Goal at c=8: at least 50x the peer's throughput, at most 1/10 of its CPU per run.
 *
 * With two cores, agenthost runs on core 0 and the peer on core 1 (taskset). The load generator
 * (this process) moves before each measurement to the core of the server that is idle then, so it
 * never shares a core with the server it measures. Each cell is measured in `--rounds` rounds
 * (default 5), the two servers back to back, who goes first alternating (A, B, then B, A); a figure
 * is the median over the rounds, a ratio the median of the rounds' own ratios, and the range is the
 * lowest and highest round. Before each of its measurements the peer forgets its threads and runs
 * (its /internal/truncate): its in-memory queue scans every run it holds, so without that it would
 * slow down as the benchmark goes on. A request agenthost sheds (503, at c=64: it admits 8 runs at
 * once by default) is sent again at once; only answered runs count, the 503s' CPU is in agenthost's
 * CPU per run. The machine's load average and the CPU other processes used during the windows are
 * printed: the machine may be shared. The compiled code is measured (a stale dist/ is rebuilt first;
 * `--no-build` runs whatever bin/agenthost picks). About 15 minutes with the defaults.
 *
 *   npm run bench:peer
 *   npm run bench:peer -- --modes=invoke,wait --concurrency=8 --rounds=3 --seconds=2 --peer-seconds=5
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { median, pinned, type Server } from "./load-service.ts";
import { MODES, check, loadAverage, measure, moveLoadGenerator, type Mode, type Sample } from "./peer-load.ts";
import { AGENTHOST_CORE, PEER_CORE, startAgenthost, startPeer, type PeerServer } from "./peer-servers.ts";

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const modeKeys = (args.modes ?? MODES.map((mode) => mode.key).join(",")).split(",");
const concurrencies = (args.concurrency ?? "1,8,64").split(",").map(Number);
const rounds = Number(args.rounds ?? 5);
/** A window lasts at least this long on agenthost… */
const seconds = Number(args.seconds ?? 2);
/** …and on the peer, which answers a run or two a second per queue worker. */
const peerSeconds = Number(args["peer-seconds"] ?? 4);
/**
 * Before a mode is measured, each server runs it at c=8 in slices (of a window's length) until its
 * CPU per run stops falling: STEADY_SLICES slices in a row that improve on the best so far by less
 * than STEADY_IMPROVEMENT, or `--warmup` seconds in all. A new process compiles the code it runs on
 * the core it is measured on: agenthost's first seconds cost several times its later ones.
 */
const warmupSeconds = Number(args.warmup ?? 40);
const STEADY_SLICES = 3;
const STEADY_IMPROVEMENT = 0.03;
const GOAL_THROUGHPUT = 50;
const GOAL_CPU = 0.1;
const GOAL_CONCURRENCY = 8;
const root = path.resolve(import.meta.dirname, "..");

for (const key of modeKeys) if (!MODES.some((mode) => mode.key === key)) throw new Error(`unknown mode ${key}: ${MODES.map((mode) => mode.key).join(", ")}`);
const modes = MODES.filter((mode) => modeKeys.includes(mode.key));

if (!("no-build" in args)) execFileSync(process.execPath, [path.join(root, "scripts/build.mjs"), "--if-stale"], { stdio: "inherit" });
// @ts-expect-error -- plain JavaScript without declarations (bin/ runs before anything is compiled)
const { distIsCurrent } = (await import("../bin/lib/entry-point.js")) as { distIsCurrent(): boolean };
const measuredCode = distIsCurrent() ? "the compiled dist/" : "the TypeScript sources through tsx (dist/ stale or missing)";
const versionOf = (name: string) => (JSON.parse(fs.readFileSync(path.join(root, "node_modules", name, "package.json"), "utf8")) as { version: string }).version;

interface Round {
  readonly agenthost: Sample;
  readonly peer: Sample;
}

const loads: number[] = [loadAverage()];
const startLoad = loads[0]!;

const agenthost = await startAgenthost(root);
let peer: PeerServer | undefined;
try {
  peer = await startPeer(root, pinned);
  const onAgenthost = (mode: Mode, concurrency: number, windowSeconds = seconds) => {
    if (pinned) moveLoadGenerator(PEER_CORE);
    return measure(agenthost, mode.agenthost, { concurrency, seconds: windowSeconds, minRuns: Math.max(20, concurrency) });
  };
  const onPeer = async (mode: Mode, concurrency: number, windowSeconds = peerSeconds) => {
    await peer!.truncate();
    if (pinned) moveLoadGenerator(AGENTHOST_CORE);
    return measure(peer!, mode.peer, { concurrency, seconds: windowSeconds, minRuns: Math.max(10, concurrency) });
  };

  console.log(
    `agenthost (one worker, memory backend) against LangGraph's own server (@langchain/langgraph-cli ${versionOf("@langchain/langgraph-cli")}, ` +
      `langgraph-api ${versionOf("@langchain/langgraph-api")}, \`langgraphjs dev\`, in memory, 10 queue workers), ` +
      `@langchain/langgraph ${versionOf("@langchain/langgraph")} on both, the fake model, a new thread per run; agenthost runs ${measuredCode}.\n` +
      (pinned
        ? `agenthost on core ${AGENTHOST_CORE}, the peer on core ${PEER_CORE}; the load generator on the core of the server not being measured.\n`
        : "One core: nothing pinned.\n") +
      `Medians of ${rounds} rounds (the two back to back, who goes first alternating); windows of at least ${seconds} s (agenthost) and ${peerSeconds} s (peer); ` +
      `ratios are medians of the rounds' own, [lowest-highest round].\n` +
      `Goal at c=${GOAL_CONCURRENCY}: throughput >= ${GOAL_THROUGHPUT}x the peer's, CPU per run <= ${GOAL_CPU} of the peer's. Load average (1 min) at start: ${startLoad.toFixed(2)}.\n`,
  );

  const columns = [
    "mode",
    "c",
    "agenthost runs/s",
    "peer runs/s",
    "runs/s agenthost/peer",
    "agenthost p50/p99 ms",
    "peer p50/p99 ms",
    "agenthost CPU ms/run",
    "peer CPU ms/run",
    "CPU agenthost/peer",
    "agenthost 503s/run",
    "others' CPU (cores)",
  ];
  console.log(`| ${columns.join(" | ")} |`);
  console.log(`|${columns.map(() => "---").join("|")}|`);

  const warmUntilSteady = async (slice: () => Promise<Sample>) => {
    const end = performance.now() + warmupSeconds * 1_000;
    let best = Infinity;
    for (let still = 0; still < STEADY_SLICES && performance.now() < end; ) {
      const { cpuMsPerRun } = await slice();
      still = cpuMsPerRun < best * (1 - STEADY_IMPROVEMENT) ? 0 : still + 1;
      best = Math.min(best, cpuMsPerRun);
    }
  };
  const over = (measured: Round[], figure: (round: Round) => number) => median(measured.map(figure));
  const range = (measured: Round[], figure: (round: Round) => number, format: (value: number) => string) => {
    const values = measured.map(figure).sort((a, b) => a - b);
    return `${format(median(values))} [${format(values[0]!)}-${format(values.at(-1)!)}]`;
  };
  const ms = (value: number) => (value >= 100 ? value.toFixed(0) : value.toFixed(1));
  const goals: string[] = [];

  for (const mode of modes) {
    await check(agenthost, mode.agenthost, "agenthost");
    await check(peer, mode.peer, "LangGraph's server");
    await warmUntilSteady(() => onAgenthost(mode, GOAL_CONCURRENCY));
    await warmUntilSteady(() => onPeer(mode, GOAL_CONCURRENCY));
    for (const concurrency of concurrencies) {
      const measured: Round[] = [];
      for (let i = 0; i < rounds; i++) {
        if (i % 2 === 0) {
          const a = await onAgenthost(mode, concurrency);
          measured.push({ agenthost: a, peer: await onPeer(mode, concurrency) });
        } else {
          const p = await onPeer(mode, concurrency);
          measured.push({ peer: p, agenthost: await onAgenthost(mode, concurrency) });
        }
        loads.push(measured.at(-1)!.agenthost.loadAverage, measured.at(-1)!.peer.loadAverage);
      }
      const errors = measured.reduce((sum, r) => sum + r.agenthost.errors + r.peer.errors, 0);
      if (errors > 0) console.log(`(${mode.name}, c=${concurrency}: ${errors} answers neither 200 nor 503)`);
      const throughput = over(measured, (r) => r.agenthost.perSecond / r.peer.perSecond);
      const cpu = over(measured, (r) => r.agenthost.cpuMsPerRun / r.peer.cpuMsPerRun);
      console.log(
        `| ${[
          mode.name,
          String(concurrency),
          over(measured, (r) => r.agenthost.perSecond).toFixed(0),
          over(measured, (r) => r.peer.perSecond).toFixed(1),
          range(measured, (r) => r.agenthost.perSecond / r.peer.perSecond, (v) => `${v.toFixed(0)}x`),
          `${ms(over(measured, (r) => r.agenthost.p50))} / ${ms(over(measured, (r) => r.agenthost.p99))}`,
          `${ms(over(measured, (r) => r.peer.p50))} / ${ms(over(measured, (r) => r.peer.p99))}`,
          over(measured, (r) => r.agenthost.cpuMsPerRun).toFixed(2),
          over(measured, (r) => r.peer.cpuMsPerRun).toFixed(2),
          range(measured, (r) => r.agenthost.cpuMsPerRun / r.peer.cpuMsPerRun, (v) => v.toFixed(3)),
          over(measured, (r) => r.agenthost.shedPerRun).toFixed(2),
          over(measured, (r) => (r.agenthost.otherCores + r.peer.otherCores) / 2).toFixed(2),
        ].join(" | ")} |`,
      );
      if (concurrency === GOAL_CONCURRENCY) {
        const met = throughput >= GOAL_THROUGHPUT && cpu <= GOAL_CPU;
        goals.push(
          `${mode.name}: ${throughput.toFixed(0)}x the throughput (goal ${GOAL_THROUGHPUT}x${throughput >= GOAL_THROUGHPUT ? "" : `, missed: ${(throughput / GOAL_THROUGHPUT).toFixed(2)} of it`}), ` +
            `CPU per run ${cpu.toFixed(3)} of the peer's = 1/${(1 / cpu).toFixed(1)} (goal 1/${(1 / GOAL_CPU).toFixed(0)}${cpu <= GOAL_CPU ? "" : `, missed: ${(cpu / GOAL_CPU).toFixed(2)}x of it`}): ${met ? "met" : "MISSED"}`,
        );
      }
    }
  }
  loads.push(loadAverage());
  const sorted = [...loads].sort((a, b) => a - b);
  console.log(`\nLoad average (1 min) while it ran: ${sorted[0]!.toFixed(2)} to ${sorted.at(-1)!.toFixed(2)}, median ${median(sorted).toFixed(2)} (start ${startLoad.toFixed(2)}, end ${loads.at(-1)!.toFixed(2)}).`);
  if (goals.length > 0) console.log(`At c=${GOAL_CONCURRENCY}:\n${goals.map((line) => `  ${line}`).join("\n")}`);
} finally {
  const servers: Server[] = [agenthost, ...(peer ? [peer] : [])];
  for (const server of servers) await server.stop();
}
