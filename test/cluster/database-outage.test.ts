// PostgreSQL cut under load from a real two-worker bin/agenthost (refused, then dropped packets),
// and a cluster that starts while PostgreSQL is down. No worker restarts, the primary stays up,
// readiness fails during the outage, requests are answered 503 (never hung, never 500), the first
// run succeeds within 5 s of the restore, nothing acknowledged is lost, and nothing is printed
// outside the JSON log. The reliability suite runs the same scenario with 60 s outages.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { TcpProxy } from "../helpers/tcp-proxy.ts";
import { dropSchema, uniqueSchema, DATABASE_HOST, DATABASE_PORT, databaseUrlThrough } from "../helpers/postgres.ts";
import { closePinned, eventually, invoke, metric, pinnedConnections, request, scrape, startCluster } from "./cluster-helper.ts";
import { startOutageScenario, type OutageFigures, type OutageMode, type Scenario } from "./outage-scenario.ts";

const OUTAGE_MS = Number(process.env.AGENTHOST_TEST_OUTAGE_MS ?? 6_000);
/**
 * With dropped packets a request fails when its query's reply is overdue: statement_timeout plus a
 * one-second margin, 6 s by default, as long as the outage itself. Two seconds (3 s in all) leaves
 * every client time for a 503 inside the outage on a loaded machine.
 */
const QUERY_TIMEOUT_S = "2";

export function assertWeathered(figures: OutageFigures): void {
  assert.equal(figures.hung, 0, "no request hung");
  assert.deepEqual(figures.unexpected, [], "every failure was 503 database_unavailable");
  assert.ok((figures.duringOutage["503"] ?? 0) > 0, `requests were answered 503 during the outage: ${JSON.stringify(figures.duringOutage)}`);
  assert.ok(figures.readinessFailed, "readiness failed throughout the outage");
  assert.ok(figures.firstSuccessMs <= 5_000, `first success ${figures.firstSuccessMs} ms after the restore`);
  assert.equal(figures.workerRestarts, 0, "no worker restarted");
  assert.ok(figures.primaryAlive, "the primary is up");
  assert.equal(figures.lostTurns, 0, `${figures.lostTurns} of ${figures.acknowledgedTurns} acknowledged turns lost`);
  assert.deepEqual(figures.rawOutput, [], "nothing outside the JSON log");
}

describe("PostgreSQL outage under load (cluster)", () => {
  let scenario: Scenario;
  before(async () => {
    scenario = await startOutageScenario({ SERVERDB_QUERY_TIMEOUT: QUERY_TIMEOUT_S });
  });
  after(async () => {
    await scenario?.close();
  });

  for (const mode of ["refused", "dropped"] as OutageMode[]) {
    test(`${mode}: ${OUTAGE_MS / 1000} s outage weathered`, { timeout: OUTAGE_MS + 120_000 }, async () => {
      const figures = await scenario.run(mode, OUTAGE_MS);
      console.log(JSON.stringify(figures));
      assertWeathered(figures);
    });
  }
});

describe("a cluster started while PostgreSQL is down", () => {
  const schema = uniqueSchema("cluster_late");
  const proxy = new TcpProxy(DATABASE_PORT, DATABASE_HOST);
  after(async () => {
    await proxy.stop();
    await dropSchema(schema);
  });

  test("workers start not ready, are not restarted, and become ready when it comes back", { timeout: 120_000 }, async () => {
    const port = await proxy.start();
    await proxy.stop();
    // One restart would be a crash loop: waiting for the database must not count as one.
    const cluster = await startCluster({
      MEMORY_BACKEND: "serverdb",
      DATABASE_URL: databaseUrlThrough(port),
      SERVERDB_SCHEMA: schema,
      WORKER_RESTART_LIMIT: "1",
    });
    try {
      const pinned = await pinnedConnections(cluster);
      for (const [{ agent }] of pinned.map((list) => [list[0]!] as const)) {
        const ready = await request(cluster.url, "GET", "/health/ready", undefined, {}, agent);
        assert.equal(ready.status, 503);
        assert.deepEqual(ready.json().checks, ["database_unreachable"]);
      }
      const refused = await invoke(cluster.url, "chatbot-agent", "late", "hello");
      assert.equal(refused.status, 503);
      assert.equal(refused.json().error_code, "database_unavailable");

      await proxy.start(port);
      for (const [{ agent }] of pinned.map((list) => [list[0]!] as const)) {
        await eventually(async () => (await request(cluster.url, "GET", "/health/ready", undefined, {}, agent)).status === 200, 10_000, "worker ready");
      }
      closePinned(pinned);
      assert.equal((await invoke(cluster.url, "chatbot-agent", "late", "hello")).status, 200);
      assert.equal(metric(await scrape(cluster), "agenthost_worker_restarts_total", { reason: "exited" }), 0);
      assert.ok(!cluster.logs.some((l) => /worker exited|refused to start/.test(String(l.msg))));
      assert.equal(cluster.stderr(), "");
    } finally {
      await cluster.stop("SIGKILL");
    }
  });
});
