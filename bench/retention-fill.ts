/**
 * The retention benchmark's database (retention-scale.ts): N conversations of ten messages in the
 * service's own storage format, written in about a minute.
 *
 * The real service (in this process) writes two template conversations of five turns each: one
 * through agenthost's own API (POST /chatbot-agent/invoke) and one through the Platform API (POST
 * /threads, then POST /threads/{id}/runs/wait). Every row it stored for each (checkpoints, pending
 * writes, message rows, the conversation-list entry; the Platform thread and run records) is then
 * copied inside the database, a few thousand conversations per transaction, under each new
 * conversation's storage key, owner and times. So each copy holds the rows the service stores for a
 * five-turn conversation, byte for byte, except that checkpoint, message and run ids repeat from one
 * copy to the next (each stays unique within its conversation, all that any reader relies on).
 *
 * HEAVY_USER (the shared secret's own user, so also the Platform API's caller) owns 60 % of them,
 * each also a Platform thread: one long list for the paging measurements. The rest belong to users
 * of about 100 conversations each. Every other conversation was last updated 31 to 60 days ago (it
 * expires under CONVERSATION_TTL = 30 days), the rest 0 to 29 days ago. The heavy user also has one
 * conversation of LONG_MESSAGES messages, for history pages.
 */
import type http from "node:http";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import { pino } from "pino";
import { conversation } from "./conversation.ts";
import type { BenchDatabase } from "./retention-db.ts";
import { storageKey } from "../src/auth/storage-key.ts";
import { PLATFORM_RUN_TABLE, PLATFORM_THREAD_TABLE } from "../src/checkpoints/platform-records.ts";
import { THREAD_TABLE } from "../src/checkpoints/thread-index.ts";
import { loadConfig } from "../src/config/load.ts";
import { ownerConfigurable } from "../src/contract/conversation-owner-key.ts";
import { createApp } from "../src/http/app.ts";
import { listen } from "../src/http/server.ts";
import { buildRuntime } from "../src/runtime.ts";

export const TOKEN = "bench-token";
export const AGENT = "chatbot-agent";
export const HEAVY_USER = "service";
export const LONG_THREAD = "long-history";
export const LONG_MESSAGES = 5_000;
export const DAY = 86_400_000;
/** CONVERSATION_TTL of the measurements: the old half has expired, the young half has not. */
export const TTL_DAYS = 30;
const HEAVY_SHARE = 0.6;
const PER_USER = 100;
const BATCH = 5_000;
const TURNS = 5;

/** One conversation of the fill. */
export interface Copy {
  readonly userId: string;
  readonly threadId: string;
  readonly storageKey: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** Last updated more than TTL_DAYS ago. */
  readonly old: boolean;
  /** Also a Platform thread (the heavy user's). */
  readonly platform: boolean;
}

export interface Filled {
  readonly copies: readonly Copy[];
  /** The template's messages as the history route showed them: what every copy must show. */
  readonly expected: ReadonlyArray<{ type: string; content: string }>;
  /** Rows per table after the fill. */
  readonly rowCounts: Record<string, number>;
  readonly seconds: number;
}

/** A small deterministic generator, so two runs fill the same times. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** The conversations to fill: who owns each, and when it was last updated. */
export function planCopies(total: number, now = Date.now()): Copy[] {
  const next = random(34);
  const heavy = Math.ceil(total * HEAVY_SHARE);
  const users = Math.max(1, Math.round((total - heavy) / PER_USER));
  return Array.from({ length: total }, (_, i) => {
    const platform = i < heavy;
    const userId = platform ? HEAVY_USER : `user-${i % users}`;
    const threadId = randomUUID();
    const old = i % 2 === 1;
    const updatedAt = Math.round(now - (old ? (TTL_DAYS + 1 + next() * 29) * DAY : next() * (TTL_DAYS - 1) * DAY));
    const createdAt = updatedAt - Math.round(next() * 3_600_000);
    return { userId, threadId, storageKey: storageKey(userId, AGENT, threadId), createdAt, updatedAt, old, platform };
  });
}

async function post(url: string, path: string, body: unknown): Promise<unknown> {
  const response = await fetch(url + path, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${path}: ${response.status} ${text}`);
  return JSON.parse(text) as unknown;
}

/** Read a conversation's first history page through the route; its messages' types and contents. */
export async function historyOf(url: string, userId: string, threadId: string): Promise<{ total: number; messages: Array<{ type: string; content: string }> }> {
  const query = new URLSearchParams({ thread_id: threadId, user_id: userId, limit: "100" });
  const response = await fetch(`${url}/${AGENT}/history?${query}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  if (!response.ok) throw new Error(`history: ${response.status} ${await response.text()}`);
  const page = (await response.json()) as { total: number; messages: Array<{ type: string; content: string }> };
  return { total: page.total, messages: page.messages.map(({ type, content }) => ({ type, content })) };
}

const TEMPLATE_USER = "template";
const API_TEMPLATE = "template-agenthost";
const PLATFORM_TEMPLATE = "template-platform";

/** The two templates and the long conversation, written by the real service in this process. */
async function writeTemplates(env: Record<string, string>, longMessages: number): Promise<Array<{ type: string; content: string }>> {
  const config = loadConfig({ USE_FAKE_MODEL: "true", AUTH_SECRET: TOKEN, HOST: "127.0.0.1", PORT: "0", LOG_LEVEL: "silent", ...env });
  const runtime = await buildRuntime(config, { logger: pino({ level: "silent" }) });
  const server: http.Server = await listen(createApp(runtime), config, undefined, runtime.shortcuts);
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const questions = Array.from({ length: TURNS }, (_, i) => `Question ${i}: what is the next step in the plan we discussed?`);
    for (const message of questions) await post(url, `/${AGENT}/invoke`, { input: { message }, thread_id: API_TEMPLATE, user_id: TEMPLATE_USER });
    await post(url, "/threads", { thread_id: PLATFORM_TEMPLATE });
    for (const content of questions) {
      await post(url, `/threads/${PLATFORM_TEMPLATE}/runs/wait`, { assistant_id: AGENT, input: { messages: [{ role: "user", content }] } });
    }
    const agent = runtime.registry.get(AGENT)!;
    const key = storageKey(HEAVY_USER, AGENT, LONG_THREAD);
    for (let from = 0; from < longMessages; from += 1_000) {
      await runtime.conversations.append(agent, key, conversation(Math.min(1_000, longMessages - from), from), Infinity, ownerConfigurable(HEAVY_USER, AGENT, LONG_THREAD));
    }
    const api = await historyOf(url, TEMPLATE_USER, API_TEMPLATE);
    const platform = await historyOf(url, HEAVY_USER, PLATFORM_TEMPLATE);
    if (api.total !== TURNS * 2 || JSON.stringify(api.messages) !== JSON.stringify(platform.messages)) {
      throw new Error("the two templates do not hold the same ten messages");
    }
    return api.messages;
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await runtime.close();
  }
}

/** How one table's rows of a template are found and what a copy changes in them. */
interface CopyRule {
  readonly where: string;
  readonly params: readonly string[];
  /** Column → expression over the copy `k` (the rest are the template's `t`). */
  readonly set: Readonly<Record<string, string>>;
}

/** The rules for every table of the database that holds rows of a template. */
function copyRules(tables: Map<string, string[]>, templateUser: string, publicId: string): Map<string, CopyRule> {
  const key = storageKey(templateUser, AGENT, publicId);
  const rules = new Map<string, CopyRule>();
  for (const [table, columns] of tables) {
    if (!columns.includes("thread_id")) continue;
    if (table === PLATFORM_THREAD_TABLE || table === PLATFORM_RUN_TABLE) {
      // Keyed by (user, public thread id): a thread exists before it has a storage key.
      rules.set(table, {
        where: "t.user_id = $1 AND t.thread_id = $2",
        params: [templateUser, publicId],
        set: { user_id: "k.user_id", thread_id: "k.public_id", created_at: "k.created_at", updated_at: "k.updated_at" },
      });
    } else if (table === THREAD_TABLE) {
      rules.set(table, {
        where: "t.thread_id = $1",
        params: [key],
        set: { thread_id: "k.storage_key", user_id: "k.user_id", public_thread_id: "k.public_id", created_at: "k.created_at", updated_at: "k.updated_at" },
      });
    } else {
      rules.set(table, { where: "t.thread_id = $1", params: [key], set: { thread_id: "k.storage_key" } });
    }
  }
  return rules;
}

/**
 * Fill `db` (whose service has never run) with the conversations of `copies`, and the heavy user's
 * conversation of `longMessages` messages. Returns what the copies must show and the rows per table.
 */
export async function fill(db: BenchDatabase, copies: readonly Copy[], log: (line: string) => void, longMessages = LONG_MESSAGES): Promise<Filled> {
  const started = performance.now();
  const expected = await writeTemplates(db.env, longMessages);
  await db.connect();
  const tables = await db.tables();
  const bigint = db.kind === "serverdb" ? "BIGINT" : "INTEGER";
  await db.rows(
    `CREATE TEMP TABLE bench_copies (storage_key TEXT PRIMARY KEY, user_id TEXT NOT NULL, public_id TEXT NOT NULL, created_at ${bigint} NOT NULL, updated_at ${bigint} NOT NULL, platform INTEGER NOT NULL)`,
  );
  const templates = [
    { platform: 0, rules: copyRules(tables, TEMPLATE_USER, API_TEMPLATE) },
    { platform: 1, rules: copyRules(tables, HEAVY_USER, PLATFORM_TEMPLATE) },
  ];
  // In storage key order: each batch writes one stretch of every table's key order, the next the stretch after it.
  const ordered = [...copies].sort((a, b) => (a.storageKey < b.storageKey ? -1 : 1));
  for (let from = 0; from < ordered.length; from += BATCH) {
    const batch = ordered.slice(from, from + BATCH);
    await db.transaction(async (run) => {
      await run("DELETE FROM bench_copies");
      if (db.kind === "serverdb") {
        await run("INSERT INTO bench_copies SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::int[])", [
          batch.map((c) => c.storageKey),
          batch.map((c) => c.userId),
          batch.map((c) => c.threadId),
          batch.map((c) => c.createdAt),
          batch.map((c) => c.updatedAt),
          batch.map((c) => (c.platform ? 1 : 0)),
        ]);
      } else {
        for (const c of batch) {
          await run("INSERT INTO bench_copies VALUES ($1, $2, $3, $4, $5, $6)", [c.storageKey, c.userId, c.threadId, c.createdAt, c.updatedAt, c.platform ? 1 : 0]);
        }
      }
      for (const { platform, rules } of templates) {
        for (const [table, rule] of rules) {
          const columns = tables.get(table)!;
          const values = columns.map((column) => rule.set[column] ?? `t."${column}"`);
          await run(
            `INSERT INTO ${table} (${columns.map((column) => `"${column}"`).join(", ")}) SELECT ${values.join(", ")} FROM bench_copies AS k CROSS JOIN ${table} AS t ` +
              `WHERE k.platform = ${platform} AND ${rule.where} ORDER BY k.storage_key`,
            rule.params,
          );
        }
      }
    });
    log(`  ${Math.min(from + BATCH, ordered.length).toLocaleString("en")} / ${ordered.length.toLocaleString("en")} conversations`);
  }
  await db.rows("DROP TABLE bench_copies");
  await db.settle();
  const rowCounts: Record<string, number> = {};
  for (const table of [...tables.keys()].sort()) rowCounts[table] = Number(Object.values((await db.rows(`SELECT count(*) AS n FROM ${table}`))[0]!)[0]);
  return { copies, expected, rowCounts, seconds: (performance.now() - started) / 1000 };
}
