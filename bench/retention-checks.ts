/**
 * What the retention benchmark (retention-scale.ts) reads through the service: the filled sample
 * checked through the history route, the page probes (conversation list, Platform search, history
 * pages) timed round by round, and the state after the final drain.
 */
import type { BenchDatabase } from "./retention-db.ts";
import { AGENT, DAY, HEAVY_USER, LONG_MESSAGES, LONG_THREAD, TTL_DAYS, type Copy, type Filled } from "./retention-fill.ts";
import { ok, percentile, timed } from "./retention-measure.ts";
import { THREAD_TABLE } from "../src/checkpoints/thread-index.ts";
import { MESSAGE_TABLE } from "../src/checkpoints/message-rows.ts";
import { PLATFORM_RUN_TABLE, PLATFORM_THREAD_TABLE } from "../src/checkpoints/platform-records.ts";

const PAGE = 20;
const WARMUP_ROUNDS = 3;

const historyPath = (userId: string, threadId: string, offset = 0, limit = 100) =>
  `/${AGENT}/history?${new URLSearchParams({ thread_id: threadId, user_id: userId, offset: String(offset), limit: String(limit) })}`;

async function history(port: number, copy: Pick<Copy, "userId" | "threadId">): Promise<{ total: number; messages: Array<{ type: string; content: string }> }> {
  const answer = await ok(timed(port, "GET", historyPath(copy.userId, copy.threadId)), "history");
  return JSON.parse(answer.body) as { total: number; messages: Array<{ type: string; content: string }> };
}

/** A few conversations of each kind: old and young, agenthost's API and the Platform's. */
function sample(copies: readonly Copy[]): Copy[] {
  const out: Copy[] = [];
  for (const old of [true, false]) {
    for (const platform of [true, false]) {
      const kind = copies.filter((c) => c.old === old && c.platform === platform);
      for (const at of [0, 0.37, 0.74, 0.99]) if (kind.length) out.push(kind[Math.floor(at * (kind.length - 1))]!);
    }
  }
  return out;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** Every sampled copy reads back as the template through the history route; a Platform copy through the Platform API; a turn continues one. */
export async function verifySample(port: number, filled: Filled): Promise<void> {
  for (const copy of sample(filled.copies)) {
    const page = await history(port, copy);
    if (page.total !== filled.expected.length || !same(page.messages.map(({ type, content }) => ({ type, content })), filled.expected)) {
      throw new Error(`conversation ${copy.threadId} of ${copy.userId} does not read back as stored: ${page.total} messages`);
    }
    if (copy.platform) {
      const state = JSON.parse((await ok(timed(port, "GET", `/threads/${copy.threadId}/state`), "Platform state")).body) as { values: { messages: unknown[] } };
      if (state.values.messages.length !== filled.expected.length) throw new Error(`Platform thread ${copy.threadId} has ${state.values.messages.length} messages`);
    }
  }
  const young = filled.copies.find((c) => !c.old && !c.platform)!;
  await ok(timed(port, "POST", `/${AGENT}/invoke`, { input: { message: "One more?" }, thread_id: young.threadId, user_id: young.userId }), "invoke");
  const after = await history(port, young);
  if (after.total !== filled.expected.length + 2 || !same(after.messages.slice(0, filled.expected.length).map(({ type, content }) => ({ type, content })), filled.expected)) {
    throw new Error("a turn on a filled conversation did not continue it");
  }
}

interface Probe {
  readonly name: string;
  readonly read: () => Promise<unknown>;
}

/** The page probes and their timings (ms), one read of each per round after a warm-up. */
export async function pageProbes(port: number, copies: readonly Copy[], rounds: number): Promise<Map<string, number[]>> {
  const heavy = copies.filter((c) => c.userId === HEAVY_USER).length;
  const offsets = [0, 1_000, 10_000, 50_000].filter((offset) => offset + PAGE <= heavy);
  const expectLength = (what: string, length: number) => {
    if (length !== PAGE) throw new Error(`${what}: ${length} entries, not ${PAGE}`);
  };
  const probes: Probe[] = [];
  for (const offset of offsets) {
    probes.push({
      name: `list (GET /${AGENT}/threads), offset ${offset.toLocaleString("en")}`,
      read: async () => {
        const answer = await ok(timed(port, "GET", `/${AGENT}/threads?limit=${PAGE}&offset=${offset}`), "list");
        expectLength("list", (JSON.parse(answer.body) as { threads: unknown[] }).threads.length);
        return answer.ms;
      },
    });
  }
  for (const offset of offsets.filter((o) => o > 0)) {
    // The cursor of the page just before: the cursor page starts at the same depth as the offset one.
    const before = JSON.parse((await ok(timed(port, "GET", `/${AGENT}/threads?limit=${PAGE}&offset=${offset - PAGE}`), "list")).body) as { next_cursor: string };
    probes.push({
      name: `list by cursor, at depth ${offset.toLocaleString("en")}`,
      read: async () => {
        const answer = await ok(timed(port, "GET", `/${AGENT}/threads?limit=${PAGE}&cursor=${before.next_cursor}`), "list");
        expectLength("list", (JSON.parse(answer.body) as { threads: unknown[] }).threads.length);
        return answer.ms;
      },
    });
  }
  for (const select of [undefined, ["thread_id", "updated_at"]]) {
    for (const offset of offsets) {
      probes.push({
        name: `POST /threads/search${select ? " (ids only)" : ""}, offset ${offset.toLocaleString("en")}`,
        read: async () => {
          const answer = await ok(timed(port, "POST", "/threads/search", { limit: PAGE, offset, ...(select ? { select } : {}) }), "search");
          expectLength("search", (JSON.parse(answer.body) as unknown[]).length);
          return answer.ms;
        },
      });
    }
  }
  const short = copies.find((c) => !c.old && !c.platform)!;
  for (const [name, path] of [
    ["history, 10 messages, page of 100", historyPath(short.userId, short.threadId)],
    [`history, ${LONG_MESSAGES.toLocaleString("en")} messages, first page of 100`, historyPath(HEAVY_USER, LONG_THREAD, 0)],
    [`history, ${LONG_MESSAGES.toLocaleString("en")} messages, last page of 100`, historyPath(HEAVY_USER, LONG_THREAD, LONG_MESSAGES - 100)],
  ] as const) {
    probes.push({ name, read: async () => (await ok(timed(port, "GET", path), "history")).ms });
  }
  const times = new Map<string, number[]>(probes.map((probe) => [probe.name, []]));
  for (let round = 0; round < WARMUP_ROUNDS + rounds; round++) {
    for (const probe of probes) {
      const ms = (await probe.read()) as number;
      if (round >= WARMUP_ROUNDS) times.get(probe.name)!.push(ms);
    }
  }
  return times;
}

export function printPages(times: Map<string, number[]>, log: (line: string) => void): void {
  const width = Math.max(...[...times.keys()].map((name) => name.length));
  for (const [name, ms] of times) log(`  ${name.padEnd(width)}  ${percentile(ms, 0.5).toFixed(1).padStart(7)} / ${percentile(ms, 0.9).toFixed(1).padStart(7)}`);
}

const count = async (db: BenchDatabase, sql: string, params: unknown[] = []) => Number(Object.values((await db.rows(sql, params))[0]!)[0]);

/**
 * Rows a deleted conversation left: in each table keyed by storage key (the message table keeps its
 * highest key's row, emptied: see MessageRows.deleteThread) and in the Platform records.
 */
async function leftOver(db: BenchDatabase, tables: Map<string, string[]>, copy: Copy): Promise<string[]> {
  const out: string[] = [];
  for (const [table, columns] of tables) {
    if (!columns.includes("thread_id")) continue;
    const platform = table === PLATFORM_THREAD_TABLE || table === PLATFORM_RUN_TABLE;
    const n = platform
      ? await count(db, `SELECT count(*) FROM ${table} WHERE user_id = $1 AND thread_id = $2`, [copy.userId, copy.threadId])
      : await count(db, `SELECT count(*) FROM ${table} WHERE thread_id = $1${table === MESSAGE_TABLE ? " AND message <> ''" : ""}`, [copy.storageKey]);
    if (n > 0) out.push(`${n} in ${table}`);
  }
  return out;
}

/**
 * After the drain (finished or cut short): every young conversation is still listed and reads; every
 * sampled old one is either gone whole (no rows anywhere, 404 on the Platform API) or not reached yet
 * and whole; when the drain finished, nothing expired is left. A summary line.
 */
export async function verifyAfterDrain(port: number, db: BenchDatabase, filled: Filled, finished: boolean): Promise<string> {
  const cutoff = Date.now() - TTL_DAYS * DAY;
  const expiredLeft = await count(db, `SELECT count(*) FROM ${THREAD_TABLE} WHERE updated_at < $1`, [cutoff]);
  const expiredPlatform = await count(db, `SELECT count(*) FROM ${PLATFORM_THREAD_TABLE} WHERE updated_at < $1`, [cutoff]);
  const youngListed = await count(db, `SELECT count(*) FROM ${THREAD_TABLE} WHERE updated_at >= $1`, [cutoff]);
  // The two templates and the long conversation were written by the service itself.
  const young = filled.copies.filter((c) => !c.old).length + 3;
  if (youngListed !== young) throw new Error(`after the drain ${youngListed} young conversations are listed, not ${young}`);
  if (finished && (expiredLeft !== 0 || expiredPlatform !== 0)) throw new Error(`after the drain: ${expiredLeft} expired list entries, ${expiredPlatform} expired Platform threads`);
  const tables = await db.tables();
  let gone = 0;
  for (const copy of sample(filled.copies)) {
    const page = await history(port, copy);
    const listed = await count(db, `SELECT count(*) FROM ${THREAD_TABLE} WHERE thread_id = $1`, [copy.storageKey]);
    if (!copy.old || listed > 0) {
      if (page.total < filled.expected.length) throw new Error(`conversation ${copy.threadId} (old: ${copy.old}) has ${page.total} messages`);
      continue;
    }
    gone++;
    const rows = await leftOver(db, tables, copy);
    if (page.total !== 0 || rows.length) throw new Error(`deleted conversation ${copy.threadId} left ${page.total} messages and rows: ${rows.join(", ")}`);
    if (copy.platform && (await timed(port, "GET", `/threads/${copy.threadId}`)).status !== 404) throw new Error(`Platform thread ${copy.threadId} is still there`);
  }
  return (
    `${expiredLeft.toLocaleString("en")} expired conversations left, every young one listed (${youngListed.toLocaleString("en")}); ` +
    `${gone} sampled expired ones gone whole, the other sampled ones read back`
  );
}
