// Issue 29 items 3 and 8 at full size: resumable streams' records under one user's flood, and resumes
// from past the end of an ended run.
//
// - No Redis (two workers, SQLite): one user streams RESUMABLE_RUNS (400) resumable runs of 2 MiB each,
//   RESUMABLE_CONCURRENCY (8) at a time. The primary keeps every worker's records: its resident memory
//   is sampled throughout: it keeps at most the default 32 MiB of one user's records, and its memory
//   levels off instead of growing with the runs (before: +1 GB, and growing).
// - Redis (two workers, SQLite, a key prefix of its own): the same 400 runs of 2 MiB, then 30 runs of
//   one 5 MiB message; the bytes Redis holds under the prefix (MEMORY USAGE of every key) must stay
//   within what the bounds allow its two writing workers.
// - Resumes from past the end of an ended run, RESUMES_PAST_END (50) per form: one process (memory),
//   two workers without Redis (the primary's record), and Redis. Each must end at once with its error
//   event; before, they were empty answers (memory) or held a slot and a Redis connection until the
//   record expired (Redis).
//
// The figures are written before the assertions, so a run against an older build (the "before"
// column of docs/reliability.md) records what it measured too.
//
//   npm run test:reliability -- resumable
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { Redis } from "ioredis";
import { request, startCluster, type Cluster } from "../cluster/cluster-helper.ts";
import { REDIS_URL } from "../helpers/redis.ts";
import { parseSseFrames } from "../helpers/run-streams.ts";
import { startService, TEST_TOKEN } from "../helpers/service.ts";
import { recordFigures } from "./figures.ts";

const RUNS = Number(process.env.RESUMABLE_RUNS ?? 400);
const CONCURRENCY = Number(process.env.RESUMABLE_CONCURRENCY ?? 8);
const PAST_END = Number(process.env.RESUMES_PAST_END ?? 50);
const MIB = 1024 * 1024;
const SPEW = "./test/fixtures/stream-agents.ts:spewAgent";
const STEPS = "./test/fixtures/run-control-agents.ts:stepsAgent";
/** The default bounds (src/config/schema.ts): what one user may keep in one process. */
const USER_BOUND = 32 * MIB;

const lines: string[] = [];
const data: Record<string, unknown> = {};
after(() => {
  recordFigures("resumable-streams", { title: "Resumable streams' records (test/reliability/resumable-streams.reliability.ts)", lines, data });
});

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(0)} MB`;

/** A process's resident memory now, from /proc. */
function rss(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

/** Sample `pid`'s resident memory every 100 ms until stopped: the highest seen. */
function sampleRss(pid: number): { stop(): number } {
  let peak = rss(pid);
  const timer = setInterval(() => (peak = Math.max(peak, rss(pid))), 100);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, rss(pid));
    },
  };
}

interface Flood {
  readonly seconds: number;
  readonly runIds: Array<{ runId: string; thread: string }>;
  /** Live streams that began (200) and ended without [DONE]: cut. */
  readonly cut: number;
  /** Runs refused before they began, by status and error code. */
  readonly refused: Record<string, number>;
}

/**
 * One user's `runs` resumable streams of `chunks` × `chunkBytes`, `CONCURRENCY` at a time, each read to
 * its end; `progress` is called after each run with how many have ended.
 */
async function flood(cluster: Cluster, runs: number, chunks: number, chunkBytes: number, progress: (ended: number) => void = () => {}): Promise<Flood> {
  const started = performance.now();
  const runIds: Flood["runIds"] = [];
  const refused: Record<string, number> = {};
  let cut = 0;
  let next = 0;
  const client = async () => {
    while (next < runs) {
      next++;
      const thread = randomUUID();
      const reply = await request(cluster.url, "POST", "/spew-agent/stream", {
        input: { message: "go" },
        thread_id: thread,
        stream_tokens: false,
        stream_resumable: true,
        agent_config: { chunks, chunk_bytes: chunkBytes },
      });
      if (reply.status !== 200) {
        const code = `${reply.status} ${(JSON.parse(reply.body) as { error_code?: string }).error_code}`;
        refused[code] = (refused[code] ?? 0) + 1;
        continue;
      }
      if (!reply.body.endsWith("data: [DONE]\n\n")) cut++;
      runIds.push({ runId: String(reply.headers["x-run-id"]), thread });
      progress(runIds.length);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, client));
  return { seconds: (performance.now() - started) / 1000, runIds, cut, refused };
}

/** What a resume from the start of `run` gets: "whole" (ends with [DONE]), "not kept", or what else it was. */
async function resumeOf(base: string, run: { runId: string; thread: string }): Promise<string> {
  const reply = await request(base, "GET", `/spew-agent/runs/${run.runId}/stream?thread_id=${run.thread}`, undefined, { "last-event-id": "0" });
  if (reply.status !== 200) return String(reply.status);
  if (reply.body.endsWith("data: [DONE]\n\n")) return "whole";
  return reply.body.includes("no longer kept") ? "not kept" : `other: ${reply.body.slice(0, 100)}`;
}

const clusters: Cluster[] = [];
const dirs: string[] = [];
after(async () => {
  await Promise.all(clusters.map((cluster) => cluster.stop("SIGKILL")));
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function cluster(env: Record<string, string>): Promise<Cluster> {
  const dir = mkdtempSync(path.join(tmpdir(), "agenthost-resumable-"));
  dirs.push(dir);
  const started = await startCluster({
    MEMORY_BACKEND: "filedb",
    FILEDB_DB_PATH: path.join(dir, "checkpoints.sqlite"),
    AGENT_PATHS: JSON.stringify([SPEW, STEPS]),
    ...env,
  });
  clusters.push(started);
  return started;
}

/** How a flood's runs went, for a figure line. */
function outcomes(result: Flood): string {
  const refused = Object.entries(result.refused).map(([code, n]) => `${n} refused ${code}`);
  return [`${result.runIds.length - result.cut} streamed whole`, `${result.cut} cut`, ...refused].join(", ");
}

describe("one user's flood of resumable streams", () => {
  test(`no Redis: ${RUNS} runs × 2 MiB; the primary's memory levels off instead of growing with the runs`, async () => {
    const host = await cluster({});
    const primary = host.process.pid!;
    // Warm up: the code paths loaded, then measure from there.
    await flood(host, 4, 1, 64 * 1024);
    const before = rss(primary);
    const sampler = sampleRss(primary);
    // The primary's memory after each quarter of the runs.
    const quarters: number[] = [];
    const result = await flood(host, RUNS, 4, 512 * 1024, (ended) => {
      if (ended % Math.ceil(RUNS / 4) === 0) quarters.push(rss(primary));
    });
    const peak = sampler.stop();
    // The 20th-newest run: pushed out by the newer ones (32 MiB holds about 15), and ended well within
    // STREAM_RESUME_TTL (the first run's record may have expired on a slow machine).
    const first = await resumeOf(host.url, result.runIds.at(-20)!);
    const last = await resumeOf(host.url, result.runIds.at(-1)!);
    data.noRedis = { runs: RUNS, seconds: result.seconds, cut: result.cut, refused: result.refused, before, peak, growth: peak - before, quarters, first, last };
    lines.push(
      `no Redis, ${RUNS} runs × 2 MiB in ${result.seconds.toFixed(1)} s (${outcomes(result)}): ` +
        `primary RSS ${mb(before)} → peak ${mb(peak)} (+${mb(peak - before)}); after each quarter of the runs ${quarters.map(mb).join(", ")}; ` +
        `a resume of the 20th-newest run: ${first}, of the newest: ${last}`,
    );
    assert.equal(result.cut, 0, "no live stream cut");
    assert.equal(first, "not kept");
    assert.equal(last, "whole");
    // The primary keeps at most 32 MiB of this user's records; beyond that its memory holds the events
    // passing through (garbage its collector takes back), which does not grow with the number of runs
    // (before the bounds: +1,081 MB for these 400 runs, in step with them).
    assert.ok(peak - before < 16 * USER_BOUND, `primary grew by ${mb(peak - before)}`);
  });

  test(`Redis: ${RUNS} runs × 2 MiB, then 30 runs × 5 MiB; what Redis holds stays within the bounds`, async () => {
    const prefix = `agenthost-reliability:${randomUUID()}`;
    const redis = new Redis(REDIS_URL);
    try {
      const host = await cluster({ REDIS_URL, REDIS_KEY_PREFIX: prefix });
      /** The bytes Redis holds under this test's prefix. */
      const held = async () => {
        let bytes = 0;
        for (const key of await redis.keys(`${prefix}:run-*`)) bytes += Number((await redis.memory("USAGE", key)) ?? 0);
        return bytes;
      };
      const usedMemory = async () => Number(/used_memory:(\d+)/.exec(await redis.info("memory"))![1]);
      const usedBefore = await usedMemory();
      const small = await flood(host, RUNS, 4, 512 * 1024);
      const afterSmall = await held();
      const big = await flood(host, 30, 1, 5 * MIB);
      const afterBig = await held();
      const usedAfter = await usedMemory();
      const first = await resumeOf(host.url, big.runIds.at(-20)!);
      const last = await resumeOf(host.url, big.runIds.at(-1)!);
      data.redis = { small: { seconds: small.seconds, cut: small.cut, refused: small.refused, held: afterSmall }, big: { seconds: big.seconds, cut: big.cut, refused: big.refused, held: afterBig }, usedBefore, usedAfter, first, last };
      lines.push(
        `Redis, ${RUNS} runs × 2 MiB in ${small.seconds.toFixed(1)} s (${outcomes(small)}): ${mb(afterSmall)} held under the prefix; ` +
          `then 30 runs × 5 MiB in ${big.seconds.toFixed(1)} s (${outcomes(big)}): ${mb(afterBig)} held; Redis used_memory ${mb(usedBefore)} → ${mb(usedAfter)} ` +
          `(a Redis other tests share); a resume of the 20th-newest 5 MiB run: ${first}, of the newest: ${last}`,
      );
      assert.equal(small.cut + big.cut, 0, "no live stream cut");
      // Two workers write, each within its own user bound (plus Redis's own overhead per entry).
      assert.ok(afterSmall < 2 * USER_BOUND * 1.25, mb(afterSmall));
      assert.ok(afterBig < 2 * USER_BOUND * 1.25, mb(afterBig));
      assert.equal(first, "not kept");
      assert.equal(last, "whole");
    } finally {
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length) await redis.del(...keys);
      redis.disconnect();
    }
  });
});

describe("resumes from past the end of an ended run", () => {
  /** `PAST_END` resumes from past the end of one ended steps-agent run through `base`: how long each took, and what each got. */
  async function pastEnd(base: string, token: string | undefined, label: string): Promise<void> {
    const thread = randomUUID();
    const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
    const run = await request(base, "POST", "/steps-agent/stream", { input: { message: "go" }, thread_id: thread, stream_tokens: false, stream_resumable: true, agent_config: { steps: 2 } }, headers);
    const events = parseSseFrames(run.body).filter((frame) => frame.id !== undefined).length;
    const runId = String(run.headers["x-run-id"]);
    const took: number[] = [];
    let ended = 0;
    for (let i = 0; i < PAST_END; i++) {
      const started = performance.now();
      const reply = await request(base, "GET", `/steps-agent/runs/${runId}/stream?thread_id=${thread}`, undefined, { ...headers, "last-event-id": String(events + 1 + (i % 5) * 100) });
      took.push(performance.now() - started);
      if (reply.status === 200 && reply.body.includes('"error_code":"validation_failed"')) ended++;
    }
    took.sort((a, b) => a - b);
    const median = took[Math.floor(took.length / 2)]!;
    const max = took.at(-1)!;
    data[`pastEnd ${label}`] = { resumes: PAST_END, ended, medianMs: median, maxMs: max };
    lines.push(`past the end, ${label}: ${ended} of ${PAST_END} resumes ended with the error event; median ${median.toFixed(1)} ms, max ${max.toFixed(1)} ms`);
    assert.equal(ended, PAST_END);
    assert.ok(max < 1_000, `a resume took ${max.toFixed(0)} ms`);
  }

  test("one process (memory)", async () => {
    const service = await startService({ AGENT_PATHS: JSON.stringify([STEPS]) });
    try {
      await pastEnd(service.url, TEST_TOKEN, "one process");
    } finally {
      await service.close();
    }
  });

  test("two workers, no Redis (the primary's record)", async () => {
    await pastEnd((await cluster({})).url, undefined, "two workers, no Redis");
  });

  test("Redis", async () => {
    const prefix = `agenthost-reliability:${randomUUID()}`;
    const redis = new Redis(REDIS_URL);
    try {
      await pastEnd((await cluster({ REDIS_URL, REDIS_KEY_PREFIX: prefix })).url, undefined, "Redis");
    } finally {
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length) await redis.del(...keys);
      redis.disconnect();
    }
  });
});
