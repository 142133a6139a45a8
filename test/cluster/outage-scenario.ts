// A PostgreSQL outage under load against the real bin/agenthost (two workers), cut through a TCP
// proxy: shared by the cluster test (short outages) and the reliability suite (60 s).
import { randomUUID } from "node:crypto";
import { TcpProxy } from "../helpers/tcp-proxy.ts";
import { dropSchema, uniqueSchema, DATABASE_HOST, DATABASE_PORT, databaseUrlThrough } from "../helpers/postgres.ts";
import { eventually, invoke, metric, request, scrape, startCluster, type Cluster } from "./cluster-helper.ts";

export type OutageMode = "refused" | "dropped";

export interface OutageFigures {
  readonly mode: OutageMode;
  readonly outageMs: number;
  /** Requests answered while the database was cut, by status. */
  readonly duringOutage: Record<string, number>;
  /** Requests that got no answer within HANG_MS (any phase). */
  readonly hung: number;
  /** Answers that were a 5xx other than 503, or a 503 other than database_unavailable (any phase). */
  readonly unexpected: string[];
  /** Readiness answered 503 database_unreachable at least once during the outage, on every probe after the first failure. */
  readonly readinessFailed: boolean;
  /** Restore → the first 200 of a new run. */
  readonly firstSuccessMs: number;
  readonly workerRestarts: number;
  readonly primaryAlive: boolean;
  /** Turns answered 200 whose answer is missing from the stored conversation. */
  readonly lostTurns: number;
  readonly acknowledgedTurns: number;
  /** Anything written outside the JSON logger: stderr text and stdout lines that are not JSON. */
  readonly rawOutput: string[];
}

/** A request older than this is hung: every database wait in the service is bounded far below it. */
const HANG_MS = 20_000;
const CLIENTS = 3;

export interface Scenario {
  readonly cluster: Cluster;
  readonly proxy: TcpProxy;
  run(mode: OutageMode, outageMs: number): Promise<OutageFigures>;
  close(): Promise<void>;
}

/** Start the cluster on a schema of its own, reaching PostgreSQL through a proxy. */
export async function startOutageScenario(env: Record<string, string> = {}): Promise<Scenario> {
  const schema = uniqueSchema("cluster_outage");
  const proxy = new TcpProxy(DATABASE_PORT, DATABASE_HOST);
  const port = await proxy.start();
  const cluster = await startCluster({
    MEMORY_BACKEND: "serverdb",
    DATABASE_URL: databaseUrlThrough(port),
    SERVERDB_SCHEMA: schema,
    ...env,
  });
  return {
    cluster,
    proxy,
    run: (mode, outageMs) => runOutage(cluster, proxy, mode, outageMs),
    close: async () => {
      await cluster.stop("SIGKILL");
      await proxy.stop();
      await dropSchema(schema);
    },
  };
}

interface Client {
  readonly thread: string;
  acknowledged: number;
}

async function runOutage(cluster: Cluster, proxy: TcpProxy, mode: OutageMode, outageMs: number): Promise<OutageFigures> {
  const restartsBefore = metric(await scrape(cluster), "agenthost_worker_restarts_total", { reason: "exited" });
  const clients: Client[] = Array.from({ length: CLIENTS }, () => ({ thread: randomUUID(), acknowledged: 0 }));
  const duringOutage: Record<string, number> = {};
  const unexpected: string[] = [];
  let hung = 0;
  let phase: "before" | "outage" | "after" = "before";
  let running = true;

  const note = (status: number, body: string) => {
    if (phase === "outage") duringOutage[status] = (duringOutage[status] ?? 0) + 1;
    if (status >= 500 && !(status === 503 && body.includes('"database_unavailable"'))) unexpected.push(`${status} ${body.slice(0, 200)}`);
  };
  const bounded = <T>(promise: Promise<T>): Promise<T | "hung"> =>
    new Promise((resolve) => {
      const timer = setTimeout(() => {
        hung++;
        resolve("hung");
      }, HANG_MS);
      promise.then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        () => {
          clearTimeout(timer);
          resolve("hung");
        },
      );
    });

  // Each client runs turns on its own conversation and reads its history, one request at a time.
  const loops = clients.map(async (client) => {
    while (running) {
      const turn = await bounded(invoke(cluster.url, "chatbot-agent", client.thread, "hello"));
      if (turn !== "hung") {
        note(turn.status, turn.body);
        if (turn.status === 200) client.acknowledged++;
      }
      const page = await bounded(request(cluster.url, "GET", `/chatbot-agent/history?thread_id=${client.thread}&limit=1`));
      if (page !== "hung") note(page.status, page.body);
      await new Promise((r) => setTimeout(r, 50));
    }
  });

  const ready = async () => (await request(cluster.url, "GET", "/health/ready")).status;
  await eventually(() => clients.every((c) => c.acknowledged > 0), 30_000, "turns succeed before the outage");

  phase = "outage";
  if (mode === "refused") await proxy.stop();
  else proxy.blackhole();
  const cutAt = performance.now();
  // Readiness fails once the workers notice, and stays failed for the rest of the outage.
  await eventually(async () => (await ready()) === 503, 15_000, "readiness fails");
  let readinessFailed = true;
  while (performance.now() - cutAt < outageMs) {
    if ((await ready()) !== 503) readinessFailed = false;
    await new Promise((r) => setTimeout(r, 500));
  }

  phase = "after";
  if (mode === "refused") await proxy.start(proxy.port);
  else proxy.restore();
  const restoredAt = performance.now();
  let firstSuccessMs = Number.NaN;
  await eventually(
    async () => {
      const res = await invoke(cluster.url, "chatbot-agent", randomUUID(), "are you back?");
      if (res.status !== 200) return false;
      firstSuccessMs = performance.now() - restoredAt;
      return true;
    },
    30_000,
    "a run succeeds after the restore",
    50,
  );
  await eventually(() => clients.every((c) => c.acknowledged > 0), 30_000, "turns succeed after the restore");
  running = false;
  await Promise.all(loops);

  // Nothing acknowledged was lost: every answered turn's reply is stored (failed turns may have
  // stored their question, or even their answer if only the reply to the commit was lost).
  let lostTurns = 0;
  for (const client of clients) {
    const page = await request(cluster.url, "GET", `/chatbot-agent/history?thread_id=${client.thread}&limit=1000`);
    const answers = page.json<{ messages: Array<{ type: string }> }>().messages.filter((m) => m.type === "ai").length;
    lostTurns += Math.max(0, client.acknowledged - answers);
  }

  const restarts = metric(await scrape(cluster), "agenthost_worker_restarts_total", { reason: "exited" }) - restartsBefore;
  const rawOutput = [
    ...cluster.logs.filter((l) => String(l.msg).startsWith("(unparsed)")).map((l) => String(l.msg)),
    ...(cluster.stderr() ? [cluster.stderr()] : []),
  ];
  return {
    mode,
    outageMs,
    duringOutage,
    hung,
    unexpected,
    readinessFailed,
    firstSuccessMs: Math.round(firstSuccessMs),
    workerRestarts: restarts,
    primaryAlive: cluster.process.exitCode === null && cluster.process.signalCode === null,
    lostTurns,
    acknowledgedTurns: clients.reduce((sum, c) => sum + c.acknowledged, 0),
    rawOutput,
  };
}
