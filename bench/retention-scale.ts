/**
 * Storage at scale: online retention and the list and history reads on a database of 100,000
 * conversations (about a million messages), on SQLite and on PostgreSQL.
 *
 *   npm run bench:retention                                   # both backends, 100,000 conversations
 *   npm run bench:retention -- --conversations=2000 --window=3 --pairs=1 --backends=filedb   # a quick run
 *
 * Per backend: fill a fresh database (retention-fill.ts: half the conversations expired under
 * CONVERSATION_TTL = 30 days; a sample checked through the history route), start the service on it
 * (retention-service.ts, one worker), then measure:
 *
 *   1. page reads, interleaved round by round: the conversation list (GET /{agent}/threads) and the
 *      Platform search (POST /threads/search) at offset 0 and deep offsets of one user's list of
 *      60 % of the conversations, and history pages of a 5,000-message conversation;
 *   2. invoke latency (p50, p99) on other conversations at a fixed arrival rate, in windows with
 *      and without a sweep, alternated (off/on, then on/off) so both see the same machine; at the
 *      default RETENTION_MAX_DELETIONS_PER_SECOND, then (service restarted) at 100,000 (unbounded);
 *   3. the sweep's throughput: deletions per second in those windows, alone, and a final drain of
 *      everything left, after which every expired conversation is gone and every other one reads.
 *
 * Options: --backends=filedb,serverdb --conversations=100000 --window=15 (seconds) --pairs=4
 * --rate=10 (invokes per second) --reads=31 (per page probe) --drain=180 (seconds at most).
 * PostgreSQL: a database
 * `agenthost_bench_scale` on BENCH_DATABASE_URL's server (default postgres://postgres@127.0.0.1:5432/test),
 * created and dropped.
 */
import { pageProbes, printPages, verifyAfterDrain, verifySample } from "./retention-checks.ts";
import { postgresDatabase, sqliteDatabase, type BenchDatabase } from "./retention-db.ts";
import { DAY, fill, planCopies, TTL_DAYS, type Copy } from "./retention-fill.ts";
import { load1, median, openLoad, percentile, startServiceUnderTest, type ServiceUnderTest } from "./retention-measure.ts";

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const backends = (args.backends ?? "filedb,serverdb").split(",");
const total = Number(args.conversations ?? 100_000);
const windowSeconds = Number(args.window ?? 15);
const pairs = Number(args.pairs ?? 4);
const rate = Number(args.rate ?? 10);
const reads = Number(args.reads ?? 31);
const drainSeconds = Number(args.drain ?? 180);
const databaseUrl = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const UNBOUNDED = 100_000;

const log = (line: string) => console.log(line);
const f1 = (v: number) => v.toFixed(1);
const range = (values: readonly number[], digits = 1) => `${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}`;

interface Window {
  readonly sweeping: boolean;
  readonly p50: number;
  readonly p99: number;
  readonly n: number;
  readonly errors: Record<number, number>;
  readonly deleted: number;
  readonly idlePasses: number;
  readonly stallMs: number;
  /** Mean ms of the checkpoint store's operations in the window. */
  readonly put: number;
  readonly getTuple: number;
  readonly deleteThread: number;
  readonly load: number;
}

/** Where the invokes' walk through the young conversations is: each window goes on where the last stopped. */
let walk = 0;

/** One measured window of invokes on young conversations, with or without a sweep under way. */
async function window(service: ServiceUnderTest, young: readonly Copy[], sweeping: boolean): Promise<Window> {
  // A stride prime to the count visits every conversation once before any twice: each invoke reads one cold.
  const pick = () => young[(walk = (walk + 7_919) % young.length)]!;
  await service.stats();
  if (sweeping) await service.ask("sweep", { on: true });
  const load = await openLoad(service.port, rate, windowSeconds, pick);
  const stats = await service.stats();
  if (sweeping) {
    await service.ask("sweep", { on: false });
    await service.stats();
  }
  return {
    sweeping,
    p50: percentile(load.latencies, 0.5),
    p99: percentile(load.latencies, 0.99),
    n: load.latencies.length,
    errors: load.errors,
    deleted: stats.deleted,
    idlePasses: stats.idlePasses,
    stallMs: stats.longestStallMs,
    put: stats.saver.put?.meanMs ?? Number.NaN,
    getTuple: stats.saver.getTuple?.meanMs ?? Number.NaN,
    deleteThread: stats.saver.deleteThread?.meanMs ?? Number.NaN,
    load: load.load,
  };
}

/** `pairs` pairs of windows, off/on then on/off, and what they show side by side. */
async function latencyPairs(service: ServiceUnderTest, young: readonly Copy[], label: string): Promise<void> {
  const windows: Window[] = [];
  for (let p = 0; p < pairs; p++) {
    for (const sweeping of p % 2 === 0 ? [false, true] : [true, false]) {
      const w = await window(service, young, sweeping);
      windows.push(w);
      log(
        `    ${sweeping ? "sweep " : "no sweep"} p50 ${f1(w.p50).padStart(6)} ms  p99 ${f1(w.p99).padStart(7)} ms  n ${w.n}` +
          `${Object.keys(w.errors).length ? `  refused ${Object.entries(w.errors).map(([status, n]) => `${n}x${status}`).join(" ")}` : ""}  deleted ${w.deleted} (${f1(w.deleted / windowSeconds)}/s)` +
          `${w.idlePasses ? `  NOTHING LEFT in ${w.idlePasses} passes` : ""}  longest stall ${f1(w.stallMs)} ms` +
          `  store ms: put ${f1(w.put)} getTuple ${f1(w.getTuple)}${w.sweeping ? ` deleteThread ${f1(w.deleteThread)}` : ""}  load ${w.load.toFixed(2)}`,
      );
    }
  }
  const off = windows.filter((w) => !w.sweeping);
  const on = windows.filter((w) => w.sweeping);
  const ratio = (pick: (w: Window) => number) => median(off.map((w, i) => pick(on[i]!) / pick(w)));
  log(`  ${label}, medians of ${pairs} windows each (spread):`);
  log(`    without a sweep: p50 ${f1(median(off.map((w) => w.p50)))} ms (${range(off.map((w) => w.p50))}), p99 ${f1(median(off.map((w) => w.p99)))} ms (${range(off.map((w) => w.p99))}), longest stall ${f1(median(off.map((w) => w.stallMs)))} ms`);
  log(`    during a sweep:  p50 ${f1(median(on.map((w) => w.p50)))} ms (${range(on.map((w) => w.p50))}), p99 ${f1(median(on.map((w) => w.p99)))} ms (${range(on.map((w) => w.p99))}), longest stall ${f1(median(on.map((w) => w.stallMs)))} ms`);
  log(`    a turn's checkpoint writes (put, mean): ${f1(median(off.map((w) => w.put)))} ms without, ${f1(median(on.map((w) => w.put)))} ms during; a sweep's deleteThread ${f1(median(on.map((w) => w.deleteThread)))} ms`);
  log(`    sweep / no sweep, median of the pairs' ratios: p50 ${ratio((w) => w.p50).toFixed(2)}x, p99 ${ratio((w) => w.p99).toFixed(2)}x`);
  log(`    sweep throughput under this load: ${f1(median(on.map((w) => w.deleted / windowSeconds)))} deleted/s (${range(on.map((w) => w.deleted / windowSeconds))}); load average ${range(windows.map((w) => w.load), 2)}`);
}

async function benchBackend(db: BenchDatabase): Promise<void> {
  log(`\n=== ${db.label}: ${total.toLocaleString("en")} conversations, load average ${load1().toFixed(2)} ===`);
  const copies = planCopies(total);
  const filled = await fill(db, copies, log);
  const messages = Object.entries(filled.rowCounts).find(([table]) => table === "agenthost_messages")?.[1] ?? 0;
  log(`fill: ${f1(filled.seconds)} s, ${(total / filled.seconds).toFixed(0)} conversations/s, ${((await db.bytes()) / 1e6).toFixed(0)} MB, ${messages.toLocaleString("en")} message rows`);
  log(`rows: ${Object.entries(filled.rowCounts).map(([table, n]) => `${table} ${n.toLocaleString("en")}`).join(", ")}`);
  const young = copies.filter((c) => !c.old && !c.platform);
  const ttl = { CONVERSATION_TTL: String(TTL_DAYS * DAY / 1000) };

  let service = await startServiceUnderTest({ ...db.env, ...ttl });
  try {
    await verifySample(service.port, filled);
    log("sample checked: old and young conversations of both APIs read back whole through the history route; a turn continues one");
    log(`\npage reads (p50 / p90 ms over ${reads} interleaved rounds; load average ${load1().toFixed(2)}):`);
    printPages(await pageProbes(service.port, copies, reads), log);

    log(`\ninvoke latency at ${rate}/s, ${windowSeconds} s windows, RETENTION_MAX_DELETIONS_PER_SECOND default (50):`);
    await latencyPairs(service, young, "default ceiling");
  } finally {
    await service.close();
  }

  service = await startServiceUnderTest({ ...db.env, ...ttl, RETENTION_MAX_DELETIONS_PER_SECOND: String(UNBOUNDED) });
  try {
    await service.stats();
    await service.ask("sweep", { on: true });
    await new Promise((resolve) => setTimeout(resolve, windowSeconds * 1000));
    const alone = await service.stats();
    await service.ask("sweep", { on: false });
    await service.stats();
    log(`\nsweep alone, ceiling ${UNBOUNDED}: ${f1(alone.deleted / windowSeconds)} deleted/s over ${windowSeconds} s (longest stall ${f1(alone.longestStallMs)} ms; load average ${load1().toFixed(2)})`);

    log(`\ninvoke latency at ${rate}/s, ${windowSeconds} s windows, RETENTION_MAX_DELETIONS_PER_SECOND ${UNBOUNDED}:`);
    await latencyPairs(service, young, "unbounded ceiling");

    const drain = (await service.ask("drain", { seconds: drainSeconds })) as { deleted: number; seconds: number; finished: boolean };
    log(
      `\ndrain, alone, ceiling ${UNBOUNDED}: ${drain.deleted.toLocaleString("en")} deleted in ${f1(drain.seconds)} s = ${f1(drain.deleted / drain.seconds)}/s` +
        `${drain.finished ? ", nothing expired left" : ` (stopped after ${drainSeconds} s)`}; load average ${load1().toFixed(2)}`,
    );
    const left = await verifyAfterDrain(service.port, db, filled, drain.finished);
    log(`after the drain: ${left}; ${((await db.bytes()) / 1e6).toFixed(0)} MB on disk (deleted rows leave free pages for new ones)`);
  } finally {
    await service.close();
  }
}

log(
  `Storage at scale (fake model, one worker; ${windowSeconds} s windows at ${rate} invokes/s)`,
);
for (const kind of backends) {
  const db = kind === "filedb" ? sqliteDatabase() : await postgresDatabase(databaseUrl);
  try {
    await benchBackend(db);
  } finally {
    await db.drop();
  }
}
