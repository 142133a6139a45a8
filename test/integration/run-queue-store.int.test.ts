// The checkpoint database's run queue (src/checkpoints/run-queue*.ts) on a real SQLite file, a real
// PostgreSQL schema and in memory: which runs can still be taken out of the queue. A run claimed for
// a first attempt that has not started (it waits for its thread, held by a run of the other API)
// can: before, it counted as executing, and an interrupt or a rollback making room left it in the
// queue, where a rollback's deleted record kept its thread's next run waiting a minute for it. A run
// that has started cannot, on any attempt.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import pg from "pg";
import { MemoryRunQueue, type RunQueueStore } from "../../src/checkpoints/run-queue.ts";
import { PostgresRunQueue, SqliteRunQueue } from "../../src/checkpoints/run-queue-sql.ts";
import Database from "../../src/checkpoints/sqlite-driver.ts";
import { DATABASE_URL, dropSchema, uniqueSchema } from "../helpers/postgres.ts";

interface Made {
  readonly store: RunQueueStore;
  close(): Promise<void>;
}

async function sqlite(): Promise<Made> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agenthost-run-queue-"));
  const db = new Database(path.join(dir, "db.sqlite"));
  return {
    store: new SqliteRunQueue(db),
    close: async () => {
      db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function postgres(): Promise<Made> {
  const schema = uniqueSchema("t_runq");
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 4 });
  await pool.query(`CREATE SCHEMA "${schema}"`);
  const store = new PostgresRunQueue(pool, schema);
  await store.setup();
  return {
    store,
    close: async () => {
      await pool.end();
      await dropSchema(schema);
    },
  };
}

async function memory(): Promise<Made> {
  return { store: new MemoryRunQueue(), close: async () => {} };
}

const LEASE_MS = 30_000;

for (const [name, make] of [["filedb", sqlite], ["serverdb", postgres], ["memory", memory]] as const) {
  describe(`run queue on ${name}`, () => {
    const opened: Made[] = [];
    after(async () => {
      for (const made of opened) await made.close();
    });
    const open = async () => {
      const made = await make();
      opened.push(made);
      return made.store;
    };
    const add = (store: RunQueueStore, runId: string, threadId = runId) => store.add({ runId, userId: "alice", threadId, availableAt: 0, caller: {} });

    test("one claim takes as many claimable runs as asked, earliest first, one per thread, and counts each attempt", async () => {
      const store = await open();
      for (const [runId, threadId] of [["a1", "a"], ["b1", "b"], ["a2", "a"], ["c1", "c"], ["d1", "d"]] as const) await add(store, runId, threadId);
      await store.add({ runId: "later", userId: "alice", threadId: "e", availableAt: Date.now() + 60_000, caller: {} });
      const first = await store.claim("w1", Date.now(), Date.now() + LEASE_MS, 3);
      assert.deepEqual(
        first.map((run) => [run.runId, run.attempt, run.leaseOwner]),
        [["a1", 1, "w1"], ["b1", 1, "w1"], ["c1", 1, "w1"]],
        "a2 waits behind a1 on its thread",
      );
      const rest = await store.claim("w2", Date.now(), Date.now() + LEASE_MS, 3);
      assert.deepEqual(rest.map((run) => run.runId), ["d1"], "fewer than asked: the rest is not claimable now (a2 behind a1, one not due)");
      assert.equal(await store.remove("a1", "w1"), true);
      assert.deepEqual((await store.claim("w2", Date.now(), Date.now() + LEASE_MS, 3)).map((run) => run.runId), ["a2"], "a1 gone: a2 is next");
      assert.deepEqual(await store.claim("w2", Date.now(), Date.now() + LEASE_MS, 3), []);
    });

    test("workers claiming at once each take a run once, one run per thread at a time, in each thread's order", async () => {
      const store = await open();
      const threads = ["t0", "t1", "t2", "t3", "t4", "t5"];
      for (let i = 0; i < 4; i++) for (const thread of threads) await add(store, `${thread}-${i}`, thread);
      const taken: string[] = [];
      const holding = new Map<string, string>();
      // Eight workers, each claiming up to three at a time and ending what it took before claiming again.
      const worker = async (owner: string) => {
        for (;;) {
          const claimed = await store.claim(owner, Date.now(), Date.now() + LEASE_MS, 3);
          if (claimed.length === 0 && taken.length === 24) return;
          for (const run of claimed) {
            assert.equal(holding.get(run.threadId), undefined, `two runs of ${run.threadId} held at once`);
            holding.set(run.threadId, run.runId);
            taken.push(run.runId);
          }
          await new Promise((resolve) => setImmediate(resolve));
          for (const run of claimed) {
            holding.delete(run.threadId);
            assert.equal(await store.remove(run.runId, owner), true);
          }
        }
      };
      await Promise.all(["w1", "w2", "w3", "w4", "w5", "w6", "w7", "w8"].map(worker));
      assert.equal(new Set(taken).size, 24, "each run taken once");
      assert.equal(taken.length, 24);
      for (const thread of threads) assert.deepEqual(taken.filter((runId) => runId.startsWith(`${thread}-`)), [0, 1, 2, 3].map((i) => `${thread}-${i}`));
    });

    test("a run claimed for an attempt that has not started is taken out of the queue; its attempt then cannot start it", async () => {
      const store = await open();
      await add(store, "waiting");
      const [claimed] = await store.claim("w1", Date.now(), Date.now() + LEASE_MS, 1);
      assert.equal(claimed?.runId, "waiting");
      assert.equal(await store.removeQueued("waiting"), true);
      assert.deepEqual(await store.onThread("alice", "waiting"), []);
      assert.equal(await store.started("waiting", "w1", "head-1"), false, "its attempt finds it gone");
    });

    test("a run that has started is not taken out, on this attempt or a later one; a queued one is", async () => {
      const store = await open();
      await add(store, "running", "t");
      await add(store, "queued", "t");
      assert.equal((await store.claim("w1", Date.now(), Date.now() + LEASE_MS, 1))[0]?.runId, "running");
      assert.equal(await store.started("running", "w1", "head-1"), true);
      assert.equal(await store.removeQueued("running"), false);
      assert.equal(await store.removeQueued("queued"), true);

      // Handed back, then claimed again: the first start's base stays, and it still cannot be taken out.
      await store.release("running", "w1", 0, true);
      const [again] = await store.claim("w2", Date.now(), Date.now() + LEASE_MS, 1);
      assert.equal(again?.base, "head-1");
      assert.equal(await store.removeQueued("running"), false);
      assert.equal(await store.started("running", "w2", "head-2"), true);
      assert.equal((await store.onThread("alice", "t"))[0]?.base, "head-1", "a later start keeps the first one's base");
      assert.equal(await store.started("running", "w1", "head-3"), false, "the first worker's claim is gone");
    });
  });
}
