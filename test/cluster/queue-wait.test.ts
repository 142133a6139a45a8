// bin/agenthost with WEB_CONCURRENCY=2, primary-brokered locks and a conversation queue
// (THREAD_QUEUE_TIMEOUT=60, THREAD_QUEUE_MAX_WAITERS=1). Holders sleep until the test cancels them, so the
// order of holding, queueing and freeing is the test's, never the clock's.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { eventually, invoke, metric, request, scrape, startCluster, type Cluster } from "./cluster-helper.ts";

describe("conversation queue across the workers of one host", () => {
  let cluster: Cluster;
  let dir: string;

  before(async () => {
    // One SQLite file for both workers, so each sees the conversation the other wrote.
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "agenthost-queue-"));
    cluster = await startCluster({
      THREAD_QUEUE_TIMEOUT: "60",
      THREAD_QUEUE_MAX_WAITERS: "1",
      MEMORY_BACKEND: "filedb",
      FILEDB_DB_PATH: path.join(dir, "db.sqlite"),
    });
  });
  after(async () => {
    await cluster?.stop("SIGKILL");
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const checkpointsWritten = async () =>
    metric(await scrape(cluster), "agenthost_checkpoint_operation_duration_seconds_count", { backend: "filedb", operation: "put" });
  /** Until the holder's run has written its first checkpoint: it holds the conversation. */
  const holding = async (written: number) => eventually(async () => (await checkpointsWritten()) > written, 10_000, "the holder's run started");
  /** Until `count` requests are queued for a conversation lock, across both workers. */
  const queued = async (count: number) =>
    eventually(async () => metric(await scrape(cluster), "agenthost_lock_acquiring") === count, 10_000, `${count} request(s) queued for the lock`);

  /** End the holder's run (it sleeps until stopped, so the test, not the clock, decides when it frees the conversation). */
  const stopHolder = async (thread: string) => {
    const cancelled = await request(cluster.url, "POST", "/slow-agent/cancel", { thread_id: thread });
    assert.equal(cancelled.json<{ cancelled: boolean }>().cancelled, true);
  };

  test("a waiter gets its turn when the holder finishes; a third request finds the queue full", async () => {
    const thread = randomUUID();
    // Consecutive new connections go to alternate workers: holder and waiter sit on different workers.
    const written = await checkpointsWritten();
    const holder = invoke(cluster.url, "slow-agent", thread, "sleep 120000");
    await holding(written);
    const waiter = invoke(cluster.url, "slow-agent", thread, "sleep 10");
    await queued(1);
    const third = await invoke(cluster.url, "slow-agent", thread, "sleep 10");
    assert.equal(third.status, 409);
    assert.equal(third.json().error_code, "conversation_busy");

    await stopHolder(thread);
    const [held, waited] = await Promise.all([holder, waiter]);
    assert.equal(held.status, 409);
    assert.equal(held.json().error_code, "run_cancelled");
    assert.equal(waited.status, 200, waited.body);
    // The holder's input was stored before it was stopped: the waiter ran after it.
    assert.match(waited.json<{ content: string }>().content, /after 2 messages/, "the waiter ran after the holder");

    const m = await scrape(cluster);
    assert.equal(metric(m, "agenthost_lock_waits_total"), 1);
    assert.equal(metric(m, "agenthost_lock_wait_duration_seconds_count", { outcome: "granted" }), 1);
    assert.equal(metric(m, "agenthost_lock_conflicts_total", { reason: "queue_full" }), 1);
  });

  test("a busy conversation on a stream route answers 409 before any stream frame", async () => {
    const thread = randomUUID();
    const body = (ms: number) => ({ input: { message: `sleep ${ms}` }, thread_id: thread });
    const written = await checkpointsWritten();
    const holder = request(cluster.url, "POST", "/slow-agent/stream", body(120_000));
    await holding(written);
    const waiter = request(cluster.url, "POST", "/slow-agent/stream/jsonl", body(10));
    await queued(1);
    const refused = await request(cluster.url, "POST", "/slow-agent/stream", body(10));
    assert.equal(refused.status, 409);
    assert.match(refused.headers["content-type"] ?? "", /application\/json/);
    await stopHolder(thread);
    const [first, second] = await Promise.all([holder, waiter]);
    assert.match(first.body, /"error_code":"run_cancelled"/);
    assert.match(second.body, /after 2 messages/);
  });
});
