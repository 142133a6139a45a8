// Four workers opening one fresh SQLite file at once, on a busy machine: every start succeeds, with
// every worker listening and ready, no worker exit and no startup refusal.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { closePinned, eventually, pinnedConnections, request, startCluster } from "./cluster-helper.ts";

/** Starts in a row: a few in `npm test`; the reliability suite sets 20. */
const STARTS = Number(process.env.AGENTHOST_TEST_SQLITE_STARTS ?? 2);
const WORKERS = 4;

/** Processes that keep the CPUs busy, so workers are descheduled at awkward moments. */
function burnCpus(count: number): ChildProcess[] {
  return Array.from({ length: count }, () => spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }));
}

describe("a fresh SQLite file opened by several workers at once", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agenthost-fresh-"));
  let burners: ChildProcess[] = [];
  before(() => {
    burners = burnCpus(os.availableParallelism());
  });
  after(() => {
    for (const burner of burners) burner.kill("SIGKILL");
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test(`${WORKERS} workers on a fresh file start ${STARTS} times in a row`, { timeout: STARTS * 90_000 }, async () => {
    let retried = 0;
    for (let start = 0; start < STARTS; start++) {
      const file = path.join(dir, `start-${start}`, "agenthost.sqlite");
      const cluster = await startCluster({ WEB_CONCURRENCY: String(WORKERS), MEMORY_BACKEND: "filedb", FILEDB_DB_PATH: file }, { waitWorkers: WORKERS });
      try {
        // Every worker is ready: its own connection to the file is in WAL mode with the schema.
        const pinned = await pinnedConnections(cluster, WORKERS);
        for (const list of pinned) {
          const agent = list[0]!.agent;
          await eventually(async () => (await request(cluster.url, "GET", "/health/ready", undefined, {}, agent)).status === 200, 10_000, "worker ready");
        }
        closePinned(pinned);
        assert.ok(!cluster.logs.some((l) => /worker exited|refused to start|crash-looping/.test(String(l.msg))), `start ${start}: no worker exited`);
        assert.equal(cluster.process.exitCode, null, `start ${start}: the primary runs`);
        retried += cluster.logs.filter((l) => l.msg === "checkpoint database unavailable; readiness fails until it is set up").length;
      } finally {
        await cluster.stop("SIGKILL");
      }
    }
    console.log(`${STARTS} starts of ${WORKERS} workers on a fresh SQLite file: all started; ${retried} of ${STARTS * WORKERS} worker setups needed a retry`);
  });
});
