// Two primaries ("hosts") on two ports, each with WEB_CONCURRENCY=2, sharing one PostgreSQL schema
// and one Redis key prefix. Host A refuses busy conversations at once (THREAD_QUEUE_TIMEOUT=0);
// host B queues for up to 5 s. Leases are 2 s so a dead holder frees its conversation quickly.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { Redis } from "ioredis";
import pg from "pg";
import {
  closePinned,
  concurrentPairs,
  eventually,
  invoke,
  metric,
  pairOver,
  pidOf,
  pinnedConnections,
  request,
  scrape,
  startCluster,
  type Cluster,
  type Reply,
} from "./cluster-helper.ts";
import { DATABASE_URL } from "../helpers/postgres.ts";
import { REDIS_URL } from "../helpers/redis.ts";


describe("two hosts sharing PostgreSQL and Redis", () => {
  const schema = `agenthost_cluster_${randomUUID().replaceAll("-", "")}`;
  const prefix = `agenthost-test:${randomUUID()}:`;
  let hostA: Cluster;
  let hostB: Cluster;
  const redis = new Redis(REDIS_URL);

  /** Until `count` conversations are held in Redis (each test's runs use fresh threads; the lock adds ":" to the prefix). */
  const held = async (count: number) =>
    eventually(async () => (await redis.keys(`${prefix}:lock:*`)).length === count, 10_000, `${count} conversation lock(s) held in Redis`);

  before(async () => {
    const shared = {
      MEMORY_BACKEND: "serverdb",
      DATABASE_URL,
      SERVERDB_SCHEMA: schema,
      REDIS_URL,
      REDIS_KEY_PREFIX: prefix,
      REDIS_LOCK_LEASE: "2",
    };
    // Start one after the other: the first creates the schema.
    hostA = await startCluster({ ...shared, THREAD_QUEUE_TIMEOUT: "0" });
    hostB = await startCluster({ ...shared, THREAD_QUEUE_TIMEOUT: "5" });
  });

  after(async () => {
    await Promise.all([hostA?.stop("SIGKILL"), hostB?.stop("SIGKILL")]);
    const client = new pg.Client({ connectionString: DATABASE_URL });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  test("two concurrent requests on one conversation: exactly one 409, whichever workers serve them", async () => {
    const { pairs } = await concurrentPairs(hostA.url);
    // And pairs whose two requests certainly reach two different workers.
    const [zero, one] = await pinnedConnections(hostA, 2, 2);
    pairs.push(...(await Promise.all([0, 1].map((i) => pairOver(hostA.url, [zero![i]!.agent, one![i]!.agent])))));
    closePinned([zero!, one!]);
    for (const pair of pairs) assert.deepEqual(pair.map((r) => r.status).sort(), [200, 409], pair.map((r) => r.body).join("\n"));
  });

  test("a conversation busy on one host answers 409 on the other; history written on one is read on the other", async () => {
    const thread = randomUUID();
    const running = invoke(hostB.url, "slow-agent", thread, "sleep 1500");
    await held(1);
    const busy = await invoke(hostA.url, "slow-agent", thread, "sleep 10");
    assert.equal(busy.status, 409);
    assert.equal(busy.json().error_code, "conversation_busy");
    const first = await running;
    assert.equal(first.status, 200);
    assert.match(first.json<{ content: string }>().content, /after 1 messages/);
    const second = await invoke(hostA.url, "slow-agent", thread, "sleep 10");
    assert.equal(second.status, 200);
    assert.match(second.json<{ content: string }>().content, /after 3 messages/, "host A read host B's turn");
  });

  test("a waiter with THREAD_QUEUE_TIMEOUT gets its turn, on the same host and across hosts", async () => {
    for (const holderHost of [hostB, hostA]) {
      const thread = randomUUID();
      const holder = invoke(holderHost.url, "slow-agent", thread, "sleep 1000");
      await held(1);
      const waiter = await invoke(hostB.url, "slow-agent", thread, "sleep 10");
      assert.equal(waiter.status, 200, waiter.body);
      assert.equal((await holder).status, 200);
      assert.match(waiter.json<{ content: string }>().content, /after 3 messages/, "the waiter ran after the holder");
    }
  });

  test("a worker killed with SIGKILL is replaced within 2 s and counted; its Redis locks free within the lease time", async () => {
    // One run on each worker, over a connection each worker accepted.
    const pinned = (await pinnedConnections(hostA)).map(([connection]) => connection!);
    const first = pidOf(hostA, pinned[0]!.worker);
    const threads = [randomUUID(), randomUUID()];
    const outcomes = threads.map((thread, i) =>
      request(hostA.url, "POST", "/slow-agent/invoke", { input: { message: "sleep 4000" }, thread_id: thread }, {}, pinned[i]!.agent).then(
        (reply): Reply | Error => reply,
        (error: Error) => error,
      ),
    );
    await held(2);
    const mark = hostA.logs.length;
    const killedAt = Date.now();
    process.kill(first, "SIGKILL");
    const forked = await hostA.waitForLog((l) => l.msg === "worker forked", 5_000, mark);
    assert.ok((forked.time as number) - killedAt < 2_000, `replacement forked ${(forked.time as number) - killedAt} ms after the kill`);
    await eventually(async () => metric(await scrape(hostA), "agenthost_worker_restarts_total", { reason: "exited" }) === 1, 2_000, "restart counted");

    let otherSettled = false;
    void outcomes[1]!.then(() => (otherSettled = true));
    assert.ok((await outcomes[0]) instanceof Error, "the run on the killed worker lost its connection");
    assert.equal(otherSettled, false, "the run on the other worker goes on");
    const lost = [threads[0]];
    // Host B queues up to 5 s; the dead holder's 2 s lease expires well before.
    const started = Date.now();
    const taken = await invoke(hostB.url, "slow-agent", lost[0]!, "sleep 10");
    assert.equal(taken.status, 200, taken.body);
    assert.ok(Date.now() - killedAt < 3_500, `free ${Date.now() - killedAt} ms after the kill (lease 2 s), waited ${Date.now() - started} ms`);
    await Promise.all(outcomes);
    closePinned([pinned]);
  });

  test("both hosts stop cleanly on SIGTERM", async () => {
    assert.deepEqual(await Promise.all([hostA.stop("SIGTERM"), hostB.stop("SIGTERM")]), [0, 0]);
  });
});
