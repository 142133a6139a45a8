// Online retention across hosts: two services (two workers each) sharing one PostgreSQL schema, all
// four workers sweeping every 200 ms. Expired conversations go, each exactly once; the others stay;
// one sweeper holds the lease at a time, and when its host stops another takes over.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { storageKey } from "../../src/auth/storage-key.ts";
import { dropSchema, DATABASE_URL, uniqueSchema, withClient } from "../helpers/postgres.ts";
import { eventually, startCluster, TOKEN, type Cluster } from "./cluster-helper.ts";

const AGENT = "chatbot-agent";

describe("online retention on two hosts sharing PostgreSQL", { concurrency: false }, () => {
  const schema = uniqueSchema("agenthost_retention");
  let hosts: Cluster[] = [];

  before(async () => {
    const env = {
      MEMORY_BACKEND: "serverdb",
      DATABASE_URL,
      SERVERDB_SCHEMA: schema,
      AGENT_PATHS: "[]",
      CONVERSATION_TTL: "3600",
      RETENTION_SWEEP_INTERVAL: "0.2",
    };
    // The first host sets the schema up; the second starts on it.
    hosts = [await startCluster(env)];
    hosts.push(await startCluster(env));
  });
  after(async () => {
    for (const host of hosts) await host.stop("SIGKILL");
    await dropSchema(schema);
  });

  const invoke = (host: Cluster, threadId: string) =>
    fetch(`${host.url}/${AGENT}/invoke`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ input: { message: "hello" }, thread_id: threadId }),
    });
  const stored = (threadId: string) =>
    withClient(async (client) => Number((await client.query(`SELECT count(*) AS n FROM "${schema}".checkpoints WHERE thread_id = $1`, [storageKey("service", AGENT, threadId)])).rows[0].n));
  const deletedByAll = () => hosts.flatMap((host) => host.logs).filter((line) => line.msg === "retention sweep").reduce((sum, line) => sum + Number(line.deleted ?? 0), 0);

  test("expired conversations are deleted once, whichever host sweeps; the others stay; a stopped sweeper is replaced", async () => {
    const expired = Array.from({ length: 8 }, (_, i) => `expired-${i}`);
    const kept = Array.from({ length: 4 }, (_, i) => `kept-${i}`);
    for (const [i, threadId] of [...expired, ...kept].entries()) assert.equal((await invoke(hosts[i % 2]!, threadId)).status, 200);
    for (const threadId of kept) assert.ok((await stored(threadId)) > 0);
    await withClient((client) => client.query(`UPDATE "${schema}".agenthost_threads SET updated_at = 0 WHERE public_thread_id = ANY($1)`, [expired]));
    await eventually(async () => (await Promise.all(expired.map(stored))).every((n) => n === 0), 30_000, "every expired conversation deleted");
    for (const threadId of kept) assert.ok((await stored(threadId)) > 0, `${threadId} kept`);
    // Each conversation was deleted by one sweeper, once.
    await eventually(() => deletedByAll() === expired.length, 10_000, "the sweeps' log lines count every deletion");
    const holder = await withClient(async (client) => (await client.query(`SELECT holder FROM "${schema}".agenthost_leases WHERE name = 'retention'`)).rows);
    assert.equal(holder.length, 1);

    // The sweeping host stops; the other host's workers take the lease over and sweep on.
    const sweeping = hosts.findIndex((host) => host.logs.some((line) => line.msg === "retention sweep"));
    assert.ok(sweeping >= 0);
    await hosts[sweeping]!.stop("SIGKILL");
    const other = hosts[1 - sweeping]!;
    hosts = [other];
    assert.equal((await invoke(other, "late")).status, 200);
    await withClient((client) => client.query(`UPDATE "${schema}".agenthost_threads SET updated_at = 0 WHERE public_thread_id = 'late'`));
    await eventually(async () => (await stored("late")) === 0, 30_000, "the other host's sweeper deleted it");
    for (const threadId of kept) assert.ok((await stored(threadId)) > 0, `${threadId} still kept`);
  });
});
