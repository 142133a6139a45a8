// SIGKILL a worker while requests flow: every request gets an answer or a connection error, none
// is left hanging on a dead worker (the primary must not hand connections to it).
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { waitFor } from "../helpers/raw-http.ts";
import { invoke, startCluster, type Cluster } from "./cluster-helper.ts";

/** Kills per run: a few in `npm test` (each waits for a replacement to start); the reliability suite sets 8. */
const KILLS = Number(process.env.AGENTHOST_TEST_KILLS ?? 3);
/** Concurrent clients, each sending one request after another on fresh connections. */
const CLIENTS = 6;
/** A request this much older than its expected 100 ms is hung: nothing else takes that long here. */
const HANG_MS = 15_000;

interface Load {
  readonly answered: number;
  readonly refused: number;
  readonly hung: number;
  stop(): Promise<void>;
}

/** CLIENTS loops of short slow-agent runs until stopped; counts answers, connection errors and hangs. */
function startLoad(cluster: Cluster): Load {
  let running = true;
  const counts = { answered: 0, refused: 0, hung: 0 };
  const one = () =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        counts.hung++;
        resolve();
      }, HANG_MS);
      invoke(cluster.url, "slow-agent", randomUUID(), "sleep 100").then(
        () => {
          counts.answered++;
          clearTimeout(timer);
          resolve();
        },
        () => {
          counts.refused++;
          clearTimeout(timer);
          resolve();
        },
      );
    });
  const loops = Array.from({ length: CLIENTS }, async () => {
    while (running) await one();
  });
  return {
    get answered() {
      return counts.answered;
    },
    get refused() {
      return counts.refused;
    },
    get hung() {
      return counts.hung;
    },
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}

describe("worker killed under load", () => {
  let cluster: Cluster;

  before(async () => {
    cluster = await startCluster({ WORKER_RESTART_LIMIT: "1000" });
  });
  after(async () => {
    await cluster?.stop("SIGKILL");
  });

  test(`${KILLS} SIGKILLs while requests flow leave no request hanging`, { timeout: 30_000 + KILLS * 30_000 }, async () => {
    const load = startLoad(cluster);
    let hungBefore = 0;
    const hangsPerKill: number[] = [];
    try {
      for (let kill = 0; kill < KILLS; kill++) {
        // Requests are flowing through both workers before each kill.
        const answered = load.answered;
        await waitFor(() => load.answered >= answered + 2 * CLIENTS, "requests flow", 60_000);
        const listening = cluster.logs.filter((l) => l.msg === "listening").length;
        const [victim] = cluster.workerPids();
        process.kill(victim!, "SIGKILL");
        // Its replacement is up and has served a share before the next kill.
        await cluster.waitForLog(() => cluster.logs.filter((l) => l.msg === "listening").length > listening, 60_000);
        const after = load.answered;
        await waitFor(() => load.answered >= after + 2 * CLIENTS, "requests flow after the restart", 60_000);
        hangsPerKill.push(load.hung - hungBefore);
        hungBefore = load.hung;
      }
    } finally {
      await load.stop();
    }
    // Requests in flight at the last kill have had HANG_MS to finish by now (stop awaited them).
    hangsPerKill[hangsPerKill.length - 1]! += load.hung - hungBefore;
    console.log(`${KILLS} kills: ${load.answered} answered, ${load.refused} connection errors, hangs per kill ${JSON.stringify(hangsPerKill)}`);
    assert.equal(load.hung, 0, `hung requests per kill: ${JSON.stringify(hangsPerKill)}`);
    assert.equal(cluster.process.exitCode, null, "the primary is still running");
  });
});
