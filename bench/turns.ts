/**
 * Turn benchmark: what one more turn costs as a conversation grows, and what a conversation costs
 * on disk, through the real service (HTTP over loopback, one worker in this process, the fake
 * model, sync durability), per backend, in one run:
 *
 *   - p50 of one more turn (POST /chatbot-agent/invoke) on conversations of 10 / 1,000 / 5,000
 *     messages, and its ratio to the 10-message turn (goal: 5,000 ≤ 3×);
 *   - the same turn on a cold cache (a new worker's first turn on the 5,000-message conversation);
 *   - the longest event-loop stall during those turns (perf_hooks.monitorEventLoopDelay; goal < 100 ms);
 *   - the storage of one 500-turn conversation (1,000 messages): every checkpoint, write and message
 *     row (goal ≤ 10 MB);
 *   - 8 conversations × 100 turns at once: p50 of the last tenth of turns over the first tenth
 *     (goal ≤ 1.5×).
 *
 *   npm run bench:turns                                   # memory, filedb, serverdb
 *   npm run bench:turns -- --backends=filedb --big=100000 # also one turn on a 100,000-message conversation
 */
import fs from "node:fs";
import type http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { pino } from "pino";
import { conversation } from "./conversation.ts";
import { pgQuery } from "./postgres.ts";
import { storageKey } from "../src/auth/storage-key.ts";
import { loadConfig } from "../src/config/load.ts";
import { createApp } from "../src/http/app.ts";
import { listen } from "../src/http/server.ts";
import { buildRuntime, type Runtime } from "../src/runtime.ts";

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const backends = (args.backends ?? "memory,filedb,serverdb").split(",");
const big = args.big ? Number(args.big) : undefined;
const databaseUrl = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const TOKEN = "bench-token";
const SIZES = [10, 1_000, 5_000];
const TURNS = 15;
const AGENT = "chatbot-agent";

interface Service {
  readonly url: string;
  readonly runtime: Runtime;
  close(): Promise<void>;
}

async function startService(env: Record<string, string>): Promise<Service> {
  const config = loadConfig({ USE_FAKE_MODEL: "true", AUTH_SECRET: TOKEN, HOST: "127.0.0.1", PORT: "0", LOG_LEVEL: "silent", ...env });
  const runtime = await buildRuntime(config, { logger: pino({ level: "silent" }) });
  const server: http.Server = await listen(createApp(runtime), config, undefined, runtime.shortcuts);
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    runtime,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await runtime.close();
    },
  };
}

async function turn(service: Service, thread: string): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${service.url}/${AGENT}/invoke`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ input: { message: "And the next step?" }, thread_id: thread }),
  });
  const body = await response.text();
  if (response.status !== 200) throw new Error(`turn failed: ${response.status} ${body}`);
  return performance.now() - started;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function seed(service: Service, thread: string, size: number): Promise<void> {
  const agent = service.runtime.registry.get(AGENT)!;
  const key = storageKey("service", AGENT, thread);
  for (let from = 0; from < size; from += 1_000) await service.runtime.conversations.append(agent, key, conversation(Math.min(1_000, size - from), from));
}

interface Backend {
  readonly env: Record<string, string>;
  /** Bytes the backend stores for everything it holds (a fresh database per measurement). */
  bytes(): Promise<number>;
  cleanup(): Promise<void>;
}

async function openBackend(kind: string): Promise<Backend> {
  if (kind === "memory") return { env: { MEMORY_BACKEND: "memory" }, bytes: async () => Number.NaN, cleanup: async () => {} };
  if (kind === "filedb") {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agenthost-bench-"));
    const file = path.join(dir, "bench.sqlite");
    return {
      env: { MEMORY_BACKEND: "filedb", FILEDB_DB_PATH: file },
      async bytes() {
        const { default: Database } = await import("../src/checkpoints/sqlite-driver.ts");
        const db = new Database(file);
        db.pragma("wal_checkpoint(TRUNCATE)");
        db.close();
        return fs.statSync(file).size;
      },
      cleanup: async () => fs.rmSync(dir, { recursive: true, force: true }),
    };
  }
  const schema = `bench_${process.pid}_${Date.now()}_${Math.random().toString(36).slice(2, 6)}`;
  const query = (sql: string) => pgQuery(databaseUrl, sql);
  return {
    env: { MEMORY_BACKEND: "serverdb", DATABASE_URL: databaseUrl, SERVERDB_SCHEMA: schema },
    async bytes() {
      await query("CHECKPOINT");
      const rows = await query(
        `SELECT coalesce(sum(pg_total_relation_size(format('%I.%I', schemaname, tablename))), 0) AS bytes FROM pg_tables WHERE schemaname = '${schema}'`,
      );
      return Number(rows[0]!.bytes);
    },
    cleanup: async () => {
      await query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    },
  };
}

const fmt = (ms: number) => `${ms.toFixed(1).padStart(7)} ms`;

async function benchTurns(kind: string): Promise<void> {
  const backend = await openBackend(kind);
  try {
    let service = await startService(backend.env);
    const p50: number[] = [];
    let hotStall = 0;
    for (const size of SIZES) {
      await seed(service, `size-${size}`, size);
      for (let i = 0; i < 3; i++) await turn(service, `size-${size}`);
      // A fresh monitor per phase: re-enabling one counts the time it was off as a delay.
      const stall = monitorEventLoopDelay({ resolution: 5 });
      stall.enable();
      const times: number[] = [];
      for (let i = 0; i < TURNS; i++) times.push(await turn(service, `size-${size}`));
      stall.disable();
      hotStall = Math.max(hotStall, stall.max / 1e6);
      p50.push(median(times));
    }
    await service.close();

    // A new worker: the first turn revives the conversation from the database.
    let cold = Number.NaN;
    let coldStall = Number.NaN;
    if (kind !== "memory") {
      service = await startService(backend.env);
      const coldMonitor = monitorEventLoopDelay({ resolution: 5 });
      coldMonitor.enable();
      cold = await turn(service, `size-${SIZES.at(-1)}`);
      coldMonitor.disable();
      coldStall = coldMonitor.max / 1e6;
      await service.close();
    }
    console.log(
      `${kind.padEnd(8)} turn p50: ${SIZES.map((size, i) => `${size}: ${fmt(p50[i]!)}`).join("  ")}` +
        `  | 5,000 vs 10: ${(p50.at(-1)! / p50[0]!).toFixed(2)}x (goal <= 3x)` +
        `  | cold 5,000: ${Number.isNaN(cold) ? "n/a" : fmt(cold)}` +
        `  | longest stall: ${hotStall.toFixed(0)} ms warm, ${Number.isNaN(coldStall) ? "n/a" : `${coldStall.toFixed(0)} ms cold`} (goal < 100)`,
    );

    // The memory backend forgets everything with its worker: a cold turn there has nothing to read.
    if (big && kind !== "memory") {
      service = await startService(backend.env);
      // Just under CONVERSATION_MAX_MESSAGES when --big is the cap: room for the four turns below.
      await seed(service, "big", big - 10);
      await service.close();
      service = await startService(backend.env);
      const coldMonitor = monitorEventLoopDelay({ resolution: 5 });
      coldMonitor.enable();
      const first = await turn(service, "big");
      coldMonitor.disable();
      const warmMonitor = monitorEventLoopDelay({ resolution: 5 });
      warmMonitor.enable();
      const next = [await turn(service, "big"), await turn(service, "big"), await turn(service, "big")];
      warmMonitor.disable();
      console.log(
        `${kind.padEnd(8)} ${big} messages: cold turn ${fmt(first)} (longest stall ${(coldMonitor.max / 1e6).toFixed(0)} ms), ` +
          `warm p50 ${fmt(median(next))} (longest stall ${(warmMonitor.max / 1e6).toFixed(0)} ms)`,
      );
      await service.close();
    }
  } finally {
    await backend.cleanup();
  }
}

async function benchStorage(kind: string): Promise<void> {
  if (kind === "memory") return;
  const backend = await openBackend(kind);
  try {
    const service = await startService(backend.env);
    for (let i = 0; i < 500; i++) await turn(service, "five-hundred");
    await service.close();
    const bytes = await backend.bytes();
    console.log(`${kind.padEnd(8)} storage of one 500-turn conversation (1,000 messages): ${(bytes / 1e6).toFixed(2)} MB (goal <= 10 MB)`);
  } finally {
    await backend.cleanup();
  }
}

async function benchConcurrent(kind: string): Promise<void> {
  const backend = await openBackend(kind);
  try {
    const service = await startService(backend.env);
    const perTurn: number[][] = Array.from({ length: 100 }, () => []);
    await Promise.all(
      Array.from({ length: 8 }, async (_, t) => {
        for (let i = 0; i < 100; i++) perTurn[i]!.push(await turn(service, `same-${t}`));
      }),
    );
    await service.close();
    const first = median(perTurn.slice(0, 10).flat());
    const last = median(perTurn.slice(90).flat());
    console.log(`${kind.padEnd(8)} 8 conversations x 100 turns: first tenth p50 ${fmt(first)}, last tenth ${fmt(last)}: ${(last / first).toFixed(2)}x (goal <= 1.5x)`);
  } finally {
    await backend.cleanup();
  }
}

console.log("Turn cost, storage and stalls (fake model, one worker, sync durability)\n");
for (const kind of backends) await benchTurns(kind);
console.log();
for (const kind of backends) await benchStorage(kind);
console.log();
for (const kind of backends) await benchConcurrent(kind);
