/**
 * The service under test of the retention benchmark (retention-scale.ts), as a child process: the
 * real service in this process (one worker, as the other benches run it in process), listening on
 * 127.0.0.1, with its retention sweeper driven by the benchmark over IPC instead of its timer
 * (RETENTION_SWEEP_INTERVAL is set far beyond the run), so a sweep runs exactly during the windows
 * the benchmark measures. A sweep is the sweeper's own `sweep()`, called back to back as its timer
 * would at a short interval. A pass reads up to 1,000 candidates, a minute's work or more at the
 * default ceiling; to stop at a window's end the sweeper is closed (it stops after the conversation
 * under way and gives up its lease), and the next window sweeps with a new one built as the
 * composition root builds it, from the same parts of the running service. Settings come from the
 * environment; the answers:
 *
 *   {op: "sweep", on}    sweeping on (passes back to back) or off (answers once the sweeper has stopped)
 *   {op: "drain", seconds} passes back to back until one deletes nothing or `seconds` have passed
 *   {op: "stats"}        deletions, passes (finished) and the longest event-loop stall since the last stats
 */
import type http from "node:http";
import type { AddressInfo } from "node:net";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { pino } from "pino";
import { RetentionSweeper } from "../src/background/retention-sweep.ts";
import { loadConfig } from "../src/config/load.ts";
import { createApp } from "../src/http/app.ts";
import { listen } from "../src/http/server.ts";
import { buildRuntime } from "../src/runtime.ts";

export interface Request {
  readonly id: number;
  readonly op: "sweep" | "drain" | "stats" | "close";
  readonly on?: boolean;
  readonly seconds?: number;
}

export interface Stats {
  readonly deleted: number;
  readonly passes: number;
  /** Seconds the sweeper spent in passes. */
  readonly sweepSeconds: number;
  /** Passes that found nothing left to delete. */
  readonly idlePasses: number;
  readonly longestStallMs: number;
  /** The checkpoint store's operations (getTuple, put, deleteThread…): how many, and their mean in ms. */
  readonly saver: Record<string, { count: number; meanMs: number }>;
}

const config = loadConfig({ ...process.env, HOST: "127.0.0.1", PORT: "0", RETENTION_SWEEP_INTERVAL: "86400" });
const runtime = await buildRuntime(config, { logger: pino({ level: "warn" }, pino.destination(2)) });
const server: http.Server = await listen(createApp(runtime), config, undefined, runtime.shortcuts);

/** Count and total seconds of each checkpoint store operation so far (the service's own histogram). */
async function saverTotals(): Promise<Map<string, { count: number; seconds: number }>> {
  const out = new Map<string, { count: number; seconds: number }>();
  for (const value of (await runtime.metrics.checkpointDuration.get()).values) {
    const operation = String(value.labels.operation);
    const entry = out.get(operation) ?? { count: 0, seconds: 0 };
    if (value.metricName?.endsWith("_count")) entry.count = value.value;
    if (value.metricName?.endsWith("_sum")) entry.seconds = value.value;
    out.set(operation, entry);
  }
  return out;
}
let saverAtStats = await saverTotals();

/** Expired conversations a pass reads (of each kind): RETENTION_BATCH of src/runtime.ts. */
const RETENTION_BATCH = 500;

/** A sweeper as buildRuntime makes it, over the running service's own parts. */
function newSweeper(): RetentionSweeper {
  return new RetentionSweeper({
    settings: {
      ttlMs: config.CONVERSATION_TTL === undefined ? null : config.CONVERSATION_TTL * 1000,
      intervalMs: config.RETENTION_SWEEP_INTERVAL * 1000,
      maxPerSecond: config.RETENTION_MAX_DELETIONS_PER_SECOND,
      batch: RETENTION_BATCH,
      keepLatest: config.CHECKPOINT_KEEP_LATEST ?? null,
      runRecordTtlMs: config.RUN_RECORD_TTL * 1000,
    },
    records: runtime.checkpoints.platform,
    index: runtime.checkpoints.threads,
    store: runtime.conversations,
    idempotency: runtime.checkpoints.idempotency,
    leases: runtime.checkpoints.leases,
    locks: runtime.locks,
    queue: runtime.runQueue,
    logger: runtime.logger,
    metrics: runtime.metrics,
  });
}
let sweeper = runtime.retention;

const deletedSoFar = async () => (await runtime.metrics.retentionDeleted.get()).values.reduce((sum, value) => sum + value.value, 0);

let stats = { passes: 0, sweepSeconds: 0, idlePasses: 0 };
let stalls = monitorEventLoopDelay({ resolution: 5 });
stalls.enable();

/** Deletions counted at the last stats. */
let deletedAtStats = 0;

/** One pass; whether it deleted anything. */
async function pass(): Promise<boolean> {
  const before = await deletedSoFar();
  const started = performance.now();
  await sweeper.sweep();
  const deleted = (await deletedSoFar()) - before;
  stats.passes++;
  stats.sweepSeconds += (performance.now() - started) / 1000;
  if (deleted === 0) stats.idlePasses++;
  return deleted > 0;
}

let sweeping = false;
let loop: Promise<void> | undefined;

async function sweepLoop(): Promise<void> {
  while (sweeping) {
    // Nothing left: wait a little, as the timer would, rather than spin.
    if (!(await pass())) await sleep(50);
  }
}

/** Sweeping on: passes back to back until told to stop. */
function startSweeping(): void {
  sweeping = true;
  loop ??= sweepLoop().finally(() => (loop = undefined));
}

/** Stop at once: the sweeper ends after the conversation under way; the next sweep takes a new one. */
async function stopSweeping(): Promise<void> {
  if (!sweeping) return;
  sweeping = false;
  await sweeper.close();
  await loop;
  sweeper = newSweeper();
}

async function answer(request: Request): Promise<unknown> {
  switch (request.op) {
    case "sweep":
      if (request.on) startSweeping();
      else await stopSweeping();
      return {};
    case "drain": {
      const before = await deletedSoFar();
      const idle = stats.idlePasses;
      const started = performance.now();
      const end = started + (request.seconds ?? Infinity) * 1000;
      startSweeping();
      while (stats.idlePasses === idle && performance.now() < end) await sleep(100);
      const seconds = (performance.now() - started) / 1000;
      await stopSweeping();
      return { deleted: (await deletedSoFar()) - before, seconds, finished: stats.idlePasses > idle };
    }
    case "stats": {
      stalls.disable();
      const now = await deletedSoFar();
      const totals = await saverTotals();
      const saver: Stats["saver"] = {};
      for (const [operation, { count, seconds }] of totals) {
        const before = saverAtStats.get(operation) ?? { count: 0, seconds: 0 };
        if (count > before.count) saver[operation] = { count: count - before.count, meanMs: ((seconds - before.seconds) * 1000) / (count - before.count) };
      }
      const out: Stats = { ...stats, deleted: now - deletedAtStats, longestStallMs: stalls.max / 1e6, saver };
      deletedAtStats = now;
      saverAtStats = totals;
      stats = { passes: 0, sweepSeconds: 0, idlePasses: 0 };
      // A fresh monitor: re-enabling one counts the time it was off as a delay.
      stalls = monitorEventLoopDelay({ resolution: 5 });
      stalls.enable();
      return out;
    }
    case "close":
      await stopSweeping();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await runtime.close();
      setImmediate(() => process.exit(0));
      return {};
  }
}

process.on("message", (request: Request) => {
  answer(request).then(
    (result) => process.send!({ id: request.id, result }),
    (error: unknown) => process.send!({ id: request.id, error: String(error) }),
  );
});
process.send!({ ready: true, port: (server.address() as AddressInfo).port });
