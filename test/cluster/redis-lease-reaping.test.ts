// A worker killed while it holds a conversation through Redis: the primary releases that worker's
// lease at once (not after REDIS_LOCK_LEASE, 10 s by default), and leaves the leases of live
// workers alone.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { Redis } from "ioredis";
import { storageKey } from "../../src/auth/storage-key.ts";
import { closePinned, eventually, invoke, pidOf, pinnedConnections, request, startCluster, type Cluster, type Reply } from "./cluster-helper.ts";
import { REDIS_URL } from "../helpers/redis.ts";


describe("Redis leases of a dead worker", () => {
  const prefix = `agenthost-test-reap-${randomUUID()}`;
  const redis = new Redis(REDIS_URL);
  let cluster: Cluster;

  before(async () => {
    // The default 10 s lease: freeing within 2 s can only be the primary's doing.
    cluster = await startCluster({ REDIS_URL, REDIS_KEY_PREFIX: prefix, LOG_LEVEL: "debug" });
  });
  after(async () => {
    await cluster?.stop("SIGKILL");
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  test("are released by the primary within 2 s; a live worker's lease is untouched", async () => {
    const pinned = (await pinnedConnections(cluster)).map(([connection]) => connection!);
    const [doomed, survivor] = [randomUUID(), randomUUID()];
    const lockKey = (thread: string) => `${prefix}:lock:${storageKey("service", "slow-agent", thread)}`;
    const reported = () => cluster.logs.filter((l) => l.msg === "conversation lease reported" && l.lease === "held").length;
    const before = reported();
    const runs = [doomed, survivor].map((thread, i) =>
      request(cluster.url, "POST", "/slow-agent/invoke", { input: { message: "sleep 6000" }, thread_id: thread }, {}, pinned[i]!.agent).then(
        (reply): Reply | Error => reply,
        (error: Error) => error,
      ),
    );
    // Both leases are in Redis and reported to the primary.
    await eventually(async () => reported() >= before + 2 && (await redis.exists(lockKey(doomed), lockKey(survivor))) === 2, 10_000, "both runs hold their lease");

    const killedAt = performance.now();
    process.kill(pidOf(cluster, pinned[0]!.worker), "SIGKILL");
    await eventually(async () => (await redis.exists(lockKey(doomed))) === 0, 2_000, "the dead worker's lease is gone", 20);
    const freedAfter = performance.now() - killedAt;
    assert.equal(await redis.exists(lockKey(survivor)), 1, "the live worker's lease is still there");
    const released = await cluster.waitForLog((l) => l.msg === "released a dead worker's conversation leases", 2_000);
    assert.equal(released.released, 1);

    // The conversation is free for the next request at once (THREAD_QUEUE_TIMEOUT=0 would answer 409).
    const next = await invoke(cluster.url, "slow-agent", doomed, "sleep 10");
    assert.equal(next.status, 200, next.body);
    console.log(`dead worker's lease released ${Math.round(freedAfter)} ms after SIGKILL (lease 10 s)`);

    const [lost, kept] = await Promise.all(runs);
    assert.ok(lost instanceof Error, "the run on the killed worker lost its connection");
    assert.ok(kept && !(kept instanceof Error) && kept.status === 200, "the live worker's run kept its lease to the end");
    closePinned([pinned]);
  });
});
