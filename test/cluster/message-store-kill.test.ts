// kill -9 in the middle of a turn, on SQLite with the message store: the worker dies after the turn's
// new message rows were written (and maybe before the checkpoint that refers to them). The
// conversation reads back whole, every completed turn is there, nothing refers to a row that was
// never written, the file passes integrity_check, and the next turn continues it.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import Database from "../../src/checkpoints/sqlite-driver.ts";
import { storageKey } from "../../src/auth/storage-key.ts";
import { eventually, invoke, request, startCluster, type Cluster } from "./cluster-helper.ts";

const KILLS = 3;
let cluster: Cluster;
let dir: string;
let file: string;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "agenthost-store-kill-"));
  file = path.join(dir, "store.sqlite");
  cluster = await startCluster({ MEMORY_BACKEND: "filedb", FILEDB_DB_PATH: file, WEB_CONCURRENCY: "1" });
});
after(async () => {
  await cluster?.stop("SIGKILL");
  fs.rmSync(dir, { recursive: true, force: true });
});

function storedRows(thread: string): number {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare("SELECT count(*) AS n FROM agenthost_messages WHERE thread_id = ?").get(storageKey("service", "slow-agent", thread)) as { n: number }).n;
  } finally {
    db.close();
  }
}

async function history(thread: string): Promise<{ total: number; contents: string[] }> {
  const reply = await request(cluster.url, "GET", `/slow-agent/history?thread_id=${thread}&limit=1000`);
  assert.equal(reply.status, 200, reply.body);
  const page = reply.json<{ total: number; messages: Array<{ content: string }> }>();
  return { total: page.total, contents: page.messages.map((m) => m.content) };
}

test("a worker killed mid-turn leaves a readable conversation that the next turn continues", async () => {
  for (let kill = 0; kill < KILLS; kill++) {
    const thread = `killed-${kill}`;
    for (const message of ["sleep 10", "sleep 10"]) assert.equal((await invoke(cluster.url, "slow-agent", thread, message)).status, 200);
    const before = await history(thread);
    assert.equal(before.total, 4);

    // The turn's question is stored as a row before the node starts its long sleep: kill then.
    const rowsBefore = storedRows(thread);
    const turn = invoke(cluster.url, "slow-agent", thread, "sleep 60000").catch(() => undefined);
    await eventually(() => storedRows(thread) > rowsBefore, 10_000, "the turn's new message row");
    const [pid] = cluster.workerPids();
    const mark = cluster.logs.length;
    process.kill(pid!, "SIGKILL");
    await turn;
    // The replacement loads the whole service: on a loaded machine that took more than 20 s.
    await cluster.waitForLog((line) => line.msg === "listening", 60_000, mark);

    const after = await history(thread);
    assert.ok(after.total === 4 || after.total === 5, `${after.total} messages after the kill`);
    assert.deepEqual(after.contents.slice(0, 4), before.contents, "every completed turn is there");
    const next = await invoke(cluster.url, "slow-agent", thread, "sleep 10");
    assert.equal(next.status, 200, next.body);
    assert.equal((await history(thread)).total, after.total + 2);
  }
  const db = new Database(file, { readonly: true });
  try {
    assert.equal(db.pragma("integrity_check", { simple: true }), "ok");
  } finally {
    db.close();
  }
});
