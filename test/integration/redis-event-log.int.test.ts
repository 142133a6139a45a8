// Issue 29 items 3 and 8, the Redis form of resumable streams' records (RedisEventLog) against the
// real Redis, a key prefix per test: a run past its bound has its stream replaced by one DROPPED entry
// (its Redis memory freed, every reader told), one user's flood pushes out only that user's records,
// and a read from at or past an ended run's end finishes at once instead of blocking until the
// record expires.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, test } from "node:test";
import { Redis } from "ioredis";
import type { StreamEvent } from "../../src/contract/messages.ts";
import type { LogEntry, LogReader } from "../../src/coordination/run-events/event-log.ts";
import { RedisEventLog } from "../../src/coordination/run-events/redis-event-log.ts";
import { waitFor } from "../helpers/raw-http.ts";
import { REDIS_URL } from "../helpers/redis.ts";

const admin = new Redis(REDIS_URL);
const opened: RedisEventLog[] = [];
const prefixes: string[] = [];
const KEY = "lat:v1:conversation";
const KIB = 1024;

after(async () => {
  await Promise.all(opened.map((log) => log.close()));
  for (const prefix of prefixes) {
    const keys = await admin.keys(`${prefix}*`);
    if (keys.length) await admin.del(...keys);
  }
  admin.disconnect();
});

/**
 * A log on a prefix of its own, once connected: it writes without an offline queue (a command while
 * Redis is unreachable fails at once), so a test that wrote before the connection lost its writes.
 */
async function redisLog(bounds: { maxRunBytes?: number; maxUserBytes?: number; maxTotalBytes?: number } = {}): Promise<{ log: RedisEventLog; events: (runId: string) => string }> {
  const keyPrefix = `agenthost-test:${randomUUID()}:`;
  prefixes.push(keyPrefix);
  const log = new RedisEventLog({
    url: REDIS_URL,
    keyPrefix,
    // Long enough that a read waiting for the record to expire shows as a timeout.
    ttlMs: 60_000,
    maxAgeMs: 120_000,
    maxRunBytes: 1e9,
    maxUserBytes: 1e9,
    maxTotalBytes: 1e9,
    ...bounds,
  });
  opened.push(log);
  const probe = new AbortController().signal;
  await waitFor(() => log.read("none", KEY, 0, probe).then(() => true, () => false), "the log's Redis connection");
  return { log, events: (runId) => `${keyPrefix}run-events:${runId}` };
}

const token = (bytes: number): StreamEvent => ({ type: "token", content: "x".repeat(bytes) });

/** Every entry a reader gets; it must end by itself within 5 s. */
async function all(reader: LogReader | undefined): Promise<LogEntry[]> {
  assert.ok(reader, "the run is known");
  const entries: LogEntry[] = [];
  const deadline = AbortSignal.timeout(5_000);
  const reading = (async () => {
    for await (const entry of reader) entries.push(entry);
  })();
  await Promise.race([
    reading,
    new Promise((_resolve, reject) => deadline.addEventListener("abort", () => reject(new Error(`the read did not end; it had ${JSON.stringify(entries).slice(0, 300)}`)))),
  ]);
  return entries;
}

test("a run past its bound: its stream becomes one DROPPED entry, its memory is freed, every reader is told", async () => {
  const { log, events } = await redisLog({ maxRunBytes: 600 * KIB });
  const runId = randomUUID();
  const writer = log.open(runId, KEY, "ann");
  for (let i = 0; i < 2; i++) writer.append(token(256 * KIB));
  await waitFor(async () => (await admin.xlen(events(runId))) === 2, "two entries written");
  const kept = Number(await admin.memory("USAGE", events(runId)));
  assert.ok(kept > 512 * KIB, `${kept} bytes`);
  const following = all(await log.read(runId, KEY, 2, new AbortController().signal));

  writer.append(token(256 * KIB));
  for (let i = 0; i < 10; i++) writer.append(token(256 * KIB));
  writer.end(true);
  assert.deepEqual(await following, [{ dropped: true }]);
  assert.deepEqual(await admin.xrange(events(runId), "-", "+"), [["1-0", ["e", JSON.stringify({ dropped: true })]]]);
  const left = Number(await admin.memory("USAGE", events(runId)));
  assert.ok(left < 8 * KIB, `${left} bytes left of ${kept}`);
  assert.equal(log.bytes, 0);
  assert.deepEqual(await all(await log.read(runId, KEY, 0, new AbortController().signal)), [{ dropped: true }]);
  assert.deepEqual(await all(await log.read(runId, KEY, 50, new AbortController().signal)), [{ dropped: true }]);
  // The record expires STREAM_RESUME_TTL after the end, as any.
  const ttl = await admin.pttl(events(runId));
  assert.ok(ttl > 50_000 && ttl <= 60_000, `${ttl} ms`);
});

test("one user's flood pushes out that user's own oldest runs in Redis; another user's run stays whole", async () => {
  const { log, events } = await redisLog({ maxUserBytes: 300 * KIB, maxTotalBytes: 500 * KIB });
  const bob = randomUUID();
  const bobWriter = log.open(bob, KEY, "bob");
  bobWriter.append(token(100 * KIB));
  bobWriter.end(true);
  const ann: string[] = [];
  for (let i = 0; i < 20; i++) {
    const runId = randomUUID();
    const writer = log.open(runId, KEY, "ann");
    writer.append(token(100 * KIB));
    writer.end(true);
    ann.push(runId);
  }
  assert.ok(log.bytes <= 500 * KIB);
  await waitFor(async () => (await admin.xlen(events(ann.at(-1)!))) === 2, "ann's last run written");
  assert.equal((await all(await log.read(bob, KEY, 0, new AbortController().signal))).length, 2, "bob's run is whole");
  assert.equal((await all(await log.read(ann.at(-1)!, KEY, 0, new AbortController().signal))).length, 2);
  assert.deepEqual(await all(await log.read(ann[0]!, KEY, 0, new AbortController().signal)), [{ dropped: true }]);
  let inRedis = 0;
  for (const runId of [bob, ...ann]) inRedis += Number(await admin.memory("USAGE", events(runId)));
  assert.ok(inRedis < 700 * KIB, `${inRedis} bytes in Redis for 2.1 MB written`);
});

test("a read from at or past an ended run's end gets the end at once; one waiting past a running run's end gets it when it comes", async () => {
  const { log } = await redisLog();
  const runId = randomUUID();
  const writer = log.open(runId, KEY, "ann");
  writer.append(token(10));
  writer.append(token(10));
  writer.end(true);
  const end = { seq: 3, end: true, clean: true };
  await waitFor(async () => (await all(await log.read(runId, KEY, 0, new AbortController().signal))).length === 3, "the run written");
  assert.deepEqual(await all(await log.read(runId, KEY, 2, new AbortController().signal)), [end]);
  assert.deepEqual(await all(await log.read(runId, KEY, 3, new AbortController().signal)), [end]);
  assert.deepEqual(await all(await log.read(runId, KEY, 99, new AbortController().signal)), [end]);

  const running = randomUUID();
  const live = log.open(running, KEY, "ann");
  live.append(token(10));
  await waitFor(async () => (await admin.exists(`${prefixes.at(-1)}run-owner:${running}`)) === 1, "the run's owner key");
  const waiting = log.read(running, KEY, 7, new AbortController().signal).then(all);
  live.end(false);
  assert.deepEqual(await waiting, [{ seq: 2, end: true, clean: false }]);
});
