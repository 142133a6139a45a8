// bin/agenthost with WEB_CONCURRENCY=2, primary-brokered locks and a conversation queue
// (THREAD_QUEUE_TIMEOUT=5, THREAD_QUEUE_MAX_WAITERS=1).
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { invoke, metric, request, scrape, startCluster, type Cluster } from "./cluster-helper.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("conversation queue across the workers of one host", () => {
  let cluster: Cluster;
  let dir: string;

  before(async () => {
    // One SQLite file for both workers, so each sees the conversation the other wrote.
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "agenthost-queue-"));
    cluster = await startCluster({
      THREAD_QUEUE_TIMEOUT: "5",
      THREAD_QUEUE_MAX_WAITERS: "1",
      MEMORY_BACKEND: "filedb",
      FILEDB_DB_PATH: path.join(dir, "db.sqlite"),
    });
  });
  after(async () => {
    await cluster?.stop("SIGKILL");
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test("a waiter gets its turn when the holder finishes; a third request finds the queue full", async () => {
    const thread = randomUUID();
    // Consecutive new connections go to alternate workers: holder and waiter sit on different workers.
    const holder = invoke(cluster.url, "slow-agent", thread, "sleep 1200");
    await sleep(300);
    const started = performance.now();
    const waiter = invoke(cluster.url, "slow-agent", thread, "sleep 10");
    await sleep(200);
    const third = await invoke(cluster.url, "slow-agent", thread, "sleep 10");
    assert.equal(third.status, 409);
    assert.equal(third.json().error_code, "conversation_busy");

    const [held, waited] = await Promise.all([holder, waiter]);
    assert.equal(held.status, 200);
    assert.equal(waited.status, 200, waited.body);
    assert.match(waited.json<{ content: string }>().content, /after 3 messages/, "the waiter ran after the holder");
    assert.ok(performance.now() - started > 600);

    const m = await scrape(cluster);
    assert.equal(metric(m, "agenthost_lock_waits_total"), 1);
    assert.equal(metric(m, "agenthost_lock_wait_duration_seconds_count", { outcome: "granted" }), 1);
    assert.equal(metric(m, "agenthost_lock_conflicts_total", { reason: "queue_full" }), 1);
  });

  test("a busy conversation on a stream route answers 409 before any stream frame", async () => {
    const thread = randomUUID();
    const body = (ms: number) => ({ input: { message: `sleep ${ms}` }, thread_id: thread });
    const holder = request(cluster.url, "POST", "/slow-agent/stream", body(1000));
    await sleep(300);
    const waiter = request(cluster.url, "POST", "/slow-agent/stream/jsonl", body(10));
    await sleep(200);
    const refused = await request(cluster.url, "POST", "/slow-agent/stream", body(10));
    assert.equal(refused.status, 409);
    assert.match(refused.headers["content-type"] ?? "", /application\/json/);
    const [first, second] = await Promise.all([holder, waiter]);
    assert.ok(first.body.trimEnd().endsWith("data: [DONE]"));
    assert.match(second.body, /after 3 messages/);
  });
});
