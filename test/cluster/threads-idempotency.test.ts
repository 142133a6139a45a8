// bin/agenthost with two workers on SQLite and on PostgreSQL: the conversation list and idempotency
// keys are shared by the workers, whichever one wrote or reads them.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import Database from "../../src/checkpoints/sqlite-driver.ts";
import { DATABASE_URL, dropSchema, uniqueSchema, withClient } from "../helpers/postgres.ts";
import { closePinned, eventually, pinnedConnections, request, startCluster, type Cluster, type PinnedConnection } from "./cluster-helper.ts";

type Listed = { thread_id: string; title: string | null; message_count: number };
type ThreadPage = { threads: Listed[]; total: number; next_offset: number | null };

interface Setup {
  readonly name: string;
  readonly env: Record<string, string>;
  /** Idempotency keys whose first request is still running. */
  running(): Promise<number>;
  cleanup(): Promise<void>;
}

function sqlite(): Setup {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agenthost-cluster-threads-"));
  const file = path.join(dir, "db.sqlite");
  return {
    name: "filedb",
    env: { MEMORY_BACKEND: "filedb", FILEDB_DB_PATH: file },
    running: async () => {
      const db = new Database(file, { readonly: true });
      try {
        return db.prepare("SELECT count(*) FROM agenthost_idempotency WHERE status IS NULL").pluck().get() as number;
      } finally {
        db.close();
      }
    },
    cleanup: async () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}

function postgres(): Setup {
  const schema = uniqueSchema("t_cluster_threads");
  return {
    name: "serverdb",
    env: { MEMORY_BACKEND: "serverdb", DATABASE_URL, SERVERDB_SCHEMA: schema },
    running: () =>
      withClient(async (client) => {
        const { rows } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM "${schema}".agenthost_idempotency WHERE status IS NULL`);
        return Number(rows[0]!.n);
      }),
    cleanup: () => dropSchema(schema),
  };
}

for (const make of [sqlite, postgres]) {
  const setup = make();
  describe(`two workers on ${setup.name}: one conversation list, one set of idempotency keys`, () => {
    let cluster: Cluster;
    let a: PinnedConnection;
    let b: PinnedConnection;
    before(async () => {
      cluster = await startCluster(setup.env);
      [[a], [b]] = (await pinnedConnections(cluster)) as [[PinnedConnection], [PinnedConnection]];
      assert.notEqual(a.worker, b.worker);
    });
    after(async () => {
      closePinned([[a], [b]]);
      await cluster.stop();
      await setup.cleanup();
    });

    const list = async (via: PinnedConnection): Promise<ThreadPage> => {
      const reply = await request(cluster.url, "GET", "/slow-agent/threads?user_id=carol", undefined, {}, via.agent);
      assert.equal(reply.status, 200, reply.body);
      return reply.json<ThreadPage>();
    };
    const invokeVia = (via: PinnedConnection, thread: string, message: string, headers: Record<string, string> = {}) =>
      request(cluster.url, "POST", "/slow-agent/invoke", { input: { message }, thread_id: thread, user_id: "carol" }, headers, via.agent);

    test("conversations written on either worker are listed by both; a clear on one removes them from both", async () => {
      assert.equal((await invokeVia(a, "on-a", "sleep 1 on a")).status, 200);
      assert.equal((await invokeVia(b, "on-b", "sleep 1 on b")).status, 200);
      assert.equal((await invokeVia(a, "on-b", "sleep 1 again on a")).status, 200);
      const fromA = await list(a);
      assert.deepEqual(fromA, await list(b));
      assert.deepEqual(fromA.threads.map((t) => [t.thread_id, t.title, t.message_count]), [
        ["on-b", "sleep 1 on b", 4],
        ["on-a", "sleep 1 on a", 2],
      ]);
      const cleared = await request(cluster.url, "DELETE", "/slow-agent/history/clear", { thread_id: "on-b", user_id: "carol" }, {}, b.agent);
      assert.equal(cleared.status, 200);
      assert.deepEqual((await list(a)).threads.map((t) => t.thread_id), ["on-a"]);
    });

    test("a retry on the other worker: 409 while the first runs, then the first answer replayed", async () => {
      const key = { "idempotency-key": `cluster-${setup.name}` };
      const first = invokeVia(a, "keyed", "sleep 1500", key);
      await eventually(async () => (await setup.running()) === 1, 10_000, "the first request's claim in the database");
      const during = await invokeVia(b, "keyed", "sleep 1500", key);
      assert.equal(during.status, 409);
      assert.equal(during.json<{ error_code: string }>().error_code, "idempotency_in_progress");
      const done = await first;
      assert.equal(done.status, 200);
      const replay = await invokeVia(b, "keyed", "sleep 1500", key);
      assert.equal(replay.status, 200);
      assert.equal(replay.headers["idempotent-replayed"], "true");
      assert.deepEqual(replay.json(), done.json());
      const reused = await invokeVia(b, "keyed", "sleep 2", key);
      assert.equal(reused.status, 422);
      assert.equal(reused.json<{ error_code: string }>().error_code, "idempotency_key_reused");
    });
  });
}
