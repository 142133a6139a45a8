// Lock overhead: p50/p90/p99 of one uncontended acquire + release for each ConversationLock.
//   node --import tsx bench/lock-overhead.ts [iterations]      (REDIS_URL defaults to the local Redis)
// memory: in this process. primary: a forked cluster worker asking this process over real IPC.
// redis: the real Redis, with the default THREAD_QUEUE_TIMEOUT=0 and with a queue (one more round trip).
import cluster from "node:cluster";
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import type { ConversationLock, LockQueuePolicy } from "../src/coordination/locks/conversation-lock.ts";
import { MemoryConversationLock } from "../src/coordination/locks/memory-lock.ts";
import { PrimaryConversationLock } from "../src/coordination/locks/primary-lock.ts";
import { RedisConversationLock } from "../src/coordination/locks/redis-lock.ts";
import { LockBroker } from "../src/coordination/locks/lock-broker.ts";
import { isMessage, workerChannel, type ToPrimary } from "../src/coordination/protocol.ts";

const iterations = Number(process.argv[2] ?? 5000);
const warmup = Math.min(500, Math.floor(iterations / 10));
const NO_QUEUE: LockQueuePolicy = { waitMs: 0, maxWaiters: 32 };
const QUEUE: LockQueuePolicy = { waitMs: 5_000, maxWaiters: 32 };

async function measure(lock: ConversationLock): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < warmup + iterations; i++) {
    const key = `bench-${i % 64}`;
    const started = performance.now();
    const outcome = await lock.acquire(key);
    if (!outcome.ok) throw new Error(`unexpected ${outcome.reason}`);
    await outcome.lease.release();
    if (i >= warmup) samples.push(performance.now() - started);
  }
  return samples;
}

function summary(name: string, samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => {
    const pos = (sorted.length - 1) * q;
    const lo = Math.floor(pos);
    const hi = Math.ceil(pos);
    return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
  };
  const round = (ms: number) => Math.round(ms * 1000) / 1000;
  return { lock: name, n: sorted.length, p50_ms: round(at(0.5)), p90_ms: round(at(0.9)), p99_ms: round(at(0.99)) };
}

if (cluster.isWorker) {
  const samples = await measure(new PrimaryConversationLock(workerChannel(), NO_QUEUE));
  process.send!({ ah: "bench", samples });
  process.disconnect();
} else {
  const results = [];
  results.push(summary("memory", await measure(new MemoryConversationLock(NO_QUEUE))));

  const broker = new LockBroker(NO_QUEUE);
  const worker = cluster.fork();
  broker.attach(worker.id, (message) => worker.send(message));
  const samples = await new Promise<number[]>((resolve) => {
    worker.on("message", (message: unknown) => {
      if (!isMessage<ToPrimary | { ah: "bench"; samples: number[] }>(message)) return;
      if (message.ah === "bench") resolve((message as { samples: number[] }).samples);
      else broker.handle(worker.id, message as ToPrimary);
    });
  });
  results.push(summary("primary (IPC)", samples));

  const url = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
  const keyPrefix = `agenthost-bench:${randomUUID()}:`;
  for (const [name, policy] of [["redis", NO_QUEUE], ["redis (queue on)", QUEUE]] as const) {
    const lock = new RedisConversationLock({ url, keyPrefix, leaseMs: 10_000, policy });
    await lock.ping().catch(() => new Promise((r) => setTimeout(r, 500)));
    results.push(summary(name, await measure(lock)));
    await lock.close();
  }
  const admin = new Redis(url);
  const keys = await admin.keys(`${keyPrefix}*`);
  if (keys.length) await admin.del(...keys);
  admin.disconnect();

  for (const result of results) console.log(JSON.stringify(result));
  console.table(results);
}
