/**
 * History page benchmark: the cost of reading a page of 100 messages from conversations of
 * 100 / 1,000 / 5,000 messages, on SQLite and PostgreSQL, through the service's read path
 * (readHistoryPage: the message index) and, for comparison, through LangGraph's getState.
 *
 *   npm run bench:history                         # both backends (PostgreSQL from BENCH_DATABASE_URL,
 *                                                 # default postgres://postgres@127.0.0.1:5432/test)
 *   npm run bench:history -- --backends=filedb    # SQLite only
 *
 * Prints p50 (and p90) over repeated reads after a warm-up; PostgreSQL uses a throwaway schema.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import pg from "pg";
import { conversation } from "./conversation.ts";
import { storageKey } from "../src/auth/storage-key.ts";
import { loadConfig } from "../src/config/load.ts";
import { buildRuntime } from "../src/runtime.ts";
import { pino } from "pino";

const SIZES = [100, 1_000, 5_000];
const PAGE = 100;
const READS = 41;
const WARMUP = 5;
const BATCH = 250;

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const backends = (args.backends ?? "filedb,serverdb").split(",");
const databaseUrl = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

async function percentiles(read: () => Promise<unknown>, reads = READS): Promise<{ p50: number; p90: number }> {
  for (let i = 0; i < WARMUP; i++) await read();
  const times: number[] = [];
  for (let i = 0; i < reads; i++) {
    const start = performance.now();
    await read();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return { p50: times[Math.floor(times.length * 0.5)]!, p90: times[Math.floor(times.length * 0.9)]! };
}

const ms = (v: number) => v.toFixed(2).padStart(8);

async function benchBackend(kind: string): Promise<void> {
  const env: Record<string, string> = { USE_FAKE_MODEL: "true", AUTH_SECRET: "bench-token", LOG_LEVEL: "silent" };
  let cleanup: () => Promise<void>;
  if (kind === "filedb") {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agenthost-bench-"));
    Object.assign(env, { MEMORY_BACKEND: "filedb", FILEDB_DB_PATH: path.join(dir, "bench.sqlite") });
    cleanup = async () => fs.rmSync(dir, { recursive: true, force: true });
  } else {
    const schema = `bench_${process.pid}_${Date.now()}`;
    Object.assign(env, { MEMORY_BACKEND: "serverdb", DATABASE_URL: databaseUrl, SERVERDB_SCHEMA: schema });
    cleanup = async () => {
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await client.end();
    };
  }
  const config = loadConfig(env);
  const runtime = await buildRuntime(config, { logger: pino({ level: "silent" }) });
  try {
    const agent = runtime.registry.get("chatbot-agent")!;
    console.log(`\n${kind === "filedb" ? "SQLite (filedb)" : "PostgreSQL (serverdb)"}: page of ${PAGE}, p50 / p90 in ms over ${READS} reads`);
    console.log("messages   first page (index)   last page (index)   getState (whole thread)");
    const firstPages: number[] = [];
    for (const size of SIZES) {
      const key = storageKey("bench-user", agent.name, `thread-${size}`);
      for (let from = 0; from < size; from += BATCH) await runtime.conversations.append(agent, key, conversation(Math.min(BATCH, size - from), from));
      const first = await percentiles(() => runtime.conversations.readPage(agent, key, 0, PAGE));
      const last = await percentiles(() => runtime.conversations.readPage(agent, key, size - PAGE, PAGE));
      const page = await runtime.conversations.readPage(agent, key, size - PAGE, PAGE);
      if (page.total !== size || page.messages.length !== PAGE) throw new Error(`bad page: ${page.total} / ${page.messages.length}`);
      const whole = await percentiles(() => agent.graph.getState({ configurable: { thread_id: key } }), size >= 5_000 ? 11 : READS);
      firstPages.push(first.p50);
      console.log(
        `${String(size).padStart(8)}   ${ms(first.p50)} / ${ms(first.p90)}   ${ms(last.p50)} / ${ms(last.p90)}   ${ms(whole.p50)} / ${ms(whole.p90)}`,
      );
    }
    console.log(`ratio of p50 first page, ${SIZES.at(-1)} vs ${SIZES[0]} messages: ${(firstPages.at(-1)! / firstPages[0]!).toFixed(2)}x (target <= 3x)`);
  } finally {
    await runtime.close();
    await cleanup();
  }
}

for (const kind of backends) await benchBackend(kind);
