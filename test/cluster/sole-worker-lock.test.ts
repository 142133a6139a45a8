// One worker on SQLite keeps the conversation lock table itself (no IPC per lock): the primary hands
// it over once the worker is up, and again to the worker that replaces it. One holder per
// conversation still holds: two invokes of one conversation at once get one 200 and one 409.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, test } from "node:test";
import { invoke, startCluster, type Cluster } from "./cluster-helper.ts";

let cluster: Cluster;
before(async () => {
  cluster = await startCluster({ WEB_CONCURRENCY: "1" });
});
after(async () => {
  await cluster?.stop("SIGKILL");
});

const KEPT = "the only worker keeps the conversation lock table";

async function oneConversationTwice(): Promise<number[]> {
  const thread = randomUUID();
  const replies = await Promise.all([0, 1].map(() => invoke(cluster.url, "slow-agent", thread, "sleep 1000")));
  return replies.map((reply) => reply.status).sort();
}

test("the only worker keeps the lock table, and one conversation still has one run at a time", async () => {
  const [pid] = cluster.workerPids();
  const kept = await cluster.waitForLog((l) => l.msg === KEPT, 10_000);
  assert.ok(kept.worker !== undefined);
  assert.deepEqual(await oneConversationTwice(), [200, 409]);

  // Its replacement gets the table in turn.
  const mark = cluster.logs.length;
  process.kill(pid!, "SIGKILL");
  const forked = await cluster.waitForLog((l) => l.msg === "worker forked", 10_000, mark);
  const keptAgain = await cluster.waitForLog((l) => l.msg === KEPT, 30_000, mark);
  assert.equal(keptAgain.worker, forked.worker);
  assert.deepEqual(await oneConversationTwice(), [200, 409]);
});
