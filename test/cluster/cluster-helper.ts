// Start the real bin/agenthost as a child process and talk to it over fresh TCP connections.
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const TOKEN = "cluster-test-token";
export const SLOW_AGENT = "./test/fixtures/agents/slow-agent.ts:slowAgent";

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export type LogLine = Record<string, unknown> & { msg?: string; pid?: number; worker?: number };

export interface Cluster {
  readonly url: string;
  readonly metricsUrl: string;
  readonly process: ChildProcess;
  readonly logs: LogLine[];
  stderr(): string;
  /** Resolves with the first log line (from now on or already seen) matching, or rejects after `ms`. */
  waitForLog(match: (line: LogLine) => boolean, ms?: number, from?: number): Promise<LogLine>;
  /** Pids of the workers that reported listening and have not been seen exiting. */
  workerPids(): number[];
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  /** SIGTERM (or the given signal) and wait for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface ClusterOptions {
  /** Workers that must be listening before start resolves (default WEB_CONCURRENCY or 2). */
  readonly waitWorkers?: number;
}

/**
 * bin/agenthost with the fake model, the slow test agent, a token, two workers, a SQLite file and
 * ports of its own, plus `env`. The environment is built from scratch: nothing leaks in from the
 * test runner, nor from a developer's .env in the checkout it runs in (AGENTHOST_DOTENV=off). (The
 * memory backend runs one worker only: each worker would keep its own.)
 */
/**
 * End what is left of a cluster's workers: each pid that is still a worker of the cluster on
 * `port` (pids are reused, so one is read from /proc before it is killed).
 */
function endWorkers(pids: readonly number[], port: number): void {
  for (const pid of pids) {
    try {
      if (!readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").includes(`PORT=${port}`)) continue;
      process.kill(pid, "SIGKILL");
    } catch {
      // Gone already.
    }
  }
}

/** Every cluster this test process started: its workers' pids, asked for as it exits, and its port. */
const started = new Set<{ readonly pids: () => number[]; readonly port: number }>();
// A test file that ends within 5 s of a primary's exit (the timer in startCluster does not hold the
// process) would leave that primary's lingering workers running: they are ended with this process.
process.once("exit", () => {
  for (const { pids, port } of started) endWorkers(pids(), port);
});

export async function startCluster(env: Record<string, string> = {}, options: ClusterOptions = {}): Promise<Cluster> {
  const port = env.PORT ? Number(env.PORT) : await freePort();
  const metricsPort = env.METRICS_PORT ? Number(env.METRICS_PORT) : await freePort();
  const dataDir = env.MEMORY_BACKEND ? undefined : mkdtempSync(path.join(os.tmpdir(), "agenthost-cluster-"));
  const fullEnv: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: process.env.HOME ?? "/tmp",
    AGENTHOST_DOTENV: "off",
    USE_FAKE_MODEL: "true",
    AUTH_SECRET: TOKEN,
    HOST: "127.0.0.1",
    WEB_CONCURRENCY: "2",
    LOG_LEVEL: "info",
    AGENT_PATHS: JSON.stringify([SLOW_AGENT]),
    WORKER_LIVENESS_INTERVAL: "0.5",
    WORKER_LIVENESS_TIMEOUT: "20",
    // The lock tests send 16 requests at once; kernel and primary may spread them unevenly.
    REQUEST_MAX_CONCURRENT: "32",
    // Tests of a busy conversation expect its 409 at once; those of the wait set their own.
    THREAD_QUEUE_TIMEOUT: "0",
    ...(dataDir ? { MEMORY_BACKEND: "filedb", FILEDB_DB_PATH: path.join(dataDir, "agenthost.sqlite") } : {}),
    ...env,
    PORT: String(port),
    METRICS_PORT: String(metricsPort),
  };
  const child = spawn(path.join(ROOT, "bin/agenthost"), [], { cwd: ROOT, env: fullEnv, stdio: ["ignore", "pipe", "pipe"] });
  const logs: LogLine[] = [];
  const listeners = new Set<() => void>();
  let stderr = "";
  let pending = "";
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    pending += chunk;
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) {
      if (!line.trim()) continue;
      try {
        logs.push(JSON.parse(line) as LogLine);
      } catch {
        logs.push({ msg: `(unparsed) ${line}` });
      }
    }
    for (const listener of listeners) listener();
  });
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  void exited.then(() => {
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    for (const listener of listeners) listener();
    // The workers hold the primary's stdout and stderr too: a worker still up 5 s after its primary
    // (SIGKILL leaves them to end on their own) would keep this test file running until the runner's
    // timeout. Past that, the pipes are let go and what is left of the workers ended.
    const lingering = setTimeout(() => {
      child.stdout?.destroy();
      child.stderr?.destroy();
      endWorkers(cluster.workerPids(), port);
    }, 5_000);
    lingering.unref();
  });

  const waitForLog = (match: (line: LogLine) => boolean, ms = 30_000, from = 0) =>
    new Promise<LogLine>((resolve, reject) => {
      const check = () => {
        const found = logs.slice(from).find(match);
        if (found) {
          done();
          resolve(found);
        } else if (child.exitCode !== null || child.signalCode !== null) {
          done();
          const lastLines = logs.slice(-8).map((line) => JSON.stringify(line)).join("\n");
          reject(new Error(`agenthost exited (${child.exitCode ?? child.signalCode}) while waiting; stderr:\n${stderr}\nlast log lines:\n${lastLines}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out waiting for a log line; last lines:\n${logs.slice(-5).map((l) => JSON.stringify(l)).join("\n")}\n${stderr}`));
      }, ms);
      const done = () => {
        clearTimeout(timer);
        listeners.delete(check);
      };
      listeners.add(check);
      check();
    });

  const cluster: Cluster = {
    url: `http://127.0.0.1:${port}`,
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    process: child,
    logs,
    stderr: () => stderr,
    waitForLog,
    workerPids: () => {
      const gone = new Set(
        logs.filter((l) => l.msg === "worker exited; replacing it" || l.msg === "replaced worker exited").map((l) => l.worker),
      );
      const pids = new Map<number, number>();
      for (const l of logs) if (l.msg === "listening" && typeof l.worker === "number" && typeof l.pid === "number") pids.set(l.worker, l.pid);
      return [...pids].filter(([worker]) => !gone.has(worker)).map(([, pid]) => pid);
    },
    exited,
    stop: async (signal = "SIGTERM") => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
  started.add({ pids: () => cluster.workerPids(), port });
  const want = options.waitWorkers ?? Number(fullEnv.WEB_CONCURRENCY);
  try {
    for (let i = 1; i <= want; i++) {
      await waitForLog(() => logs.filter((l) => l.msg === "listening").length >= i, 60_000);
    }
  } catch (error) {
    // A start that failed leaves nothing running: a primary left behind (its workers with it) kept
    // the test file from exiting until the runner's timeout.
    await cluster.stop("SIGKILL");
    throw error;
  }
  return cluster;
}

export interface Reply {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
  json<T = Record<string, unknown>>(): T;
}

/**
 * One request on a new TCP connection (no keep-alive pool), so the kernel spreads requests over
 * the workers; or on `agent`'s connection (see pinnedConnections). Rejects on connection errors.
 */
export function request(
  base: string,
  method: string,
  pathname: string,
  body?: unknown,
  headers: Record<string, string> = {},
  agent: http.Agent | false = false,
): Promise<Reply> {
  const url = new URL(pathname, base);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method,
        agent,
        headers: {
          authorization: `Bearer ${TOKEN}`,
          ...(payload ? { "content-type": "application/json", "content-length": String(Buffer.byteLength(payload)) } : {}),
          ...headers,
        },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text, json: <T>() => JSON.parse(text) as T }),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

export const invoke = (base: string, agent: string, thread: string, message: string, headers?: Record<string, string>) =>
  request(base, "POST", `/${agent}/invoke`, { input: { message }, thread_id: thread }, headers);

/**
 * `count` conversations, each sent two identical slow invokes at the same moment. Returns the reply
 * pairs and the request ids used, so a test can check which workers served them.
 */
export async function concurrentPairs(base: string, count = 8): Promise<{ pairs: Reply[][]; ids: Set<string> }> {
  const ids = new Set<string>();
  const pairs = await Promise.all(
    Array.from({ length: count }, () => {
      const thread = randomUUID();
      return Promise.all(
        [0, 1].map(() => {
          const id = randomUUID();
          ids.add(id);
          return invoke(base, "slow-agent", thread, "sleep 1000", { "x-request-id": id });
        }),
      );
    }),
  );
  return { pairs, ids };
}

export function workersServing(logs: readonly LogLine[], requestIds: ReadonlySet<string>): Set<number> {
  const workers = new Set<number>();
  for (const l of logs) {
    if (l.msg === "request" && typeof l.request_id === "string" && requestIds.has(l.request_id) && typeof l.worker === "number") {
      workers.add(l.worker);
    }
  }
  return workers;
}

/** Sample values from a Prometheus text exposition: `name{labels}` → value. */
export function parseMetrics(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const space = line.lastIndexOf(" ");
    out.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return out;
}

/** A value by metric name and labels in any order; 0 when the series is absent. */
export function metric(samples: Map<string, number>, name: string, labels: Record<string, string> = {}): number {
  const want = Object.entries(labels);
  for (const [key, value] of samples) {
    const brace = key.indexOf("{");
    const metricName = brace < 0 ? key : key.slice(0, brace);
    if (metricName !== name) continue;
    const body = brace < 0 ? "" : key.slice(brace + 1, -1);
    const have = new Map<string, string>();
    for (const m of body.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) have.set(m[1]!, m[2]!);
    if (have.size === want.length && want.every(([k, v]) => have.get(k) === v)) return value;
  }
  return 0;
}

export async function scrape(cluster: Cluster): Promise<Map<string, number>> {
  const res = await fetch(cluster.metricsUrl);
  if (res.status !== 200) throw new Error(`metrics answered ${res.status}`);
  return parseMetrics(await res.text());
}

/** Poll `check` until it returns true, or fail after `ms`. */
export async function eventually(check: () => Promise<boolean> | boolean, ms: number, what: string, everyMs = 100): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await Promise.resolve().then(check).catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * Runs `work`; should it fail, its error carries the cluster's log lines that `concern` (at most the
 * last 80): a failure on a loaded CI machine says what the workers did.
 */
export async function withLogs<T>(cluster: Cluster, concern: (line: LogLine) => boolean, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    const lines = cluster.logs.filter(concern).slice(-80);
    if (error instanceof Error) error.message += `\nthe cluster's log lines for it:\n${lines.map((line) => JSON.stringify(line)).join("\n")}`;
    throw error;
  }
}

export interface PinnedConnection {
  /** The cluster worker id that accepted the connection. */
  readonly worker: number;
  /** An agent with that one connection: every request sent with it reaches `worker`. */
  readonly agent: http.Agent;
}

/**
 * `perWorker` keep-alive connections to each of `workers` workers, in worker order. The kernel
 * decides which worker accepts a new connection (SCHED_NONE), and that worker serves all of it, so
 * new connections are opened one at a time until every worker has accepted enough.
 */
export async function pinnedConnections(cluster: Cluster, workers = 2, perWorker = 1, tries = 200): Promise<PinnedConnection[][]> {
  const byWorker = new Map<number, PinnedConnection[]>();
  const full = () => byWorker.size >= workers && [...byWorker.values()].every((list) => list.length >= perWorker);
  for (let i = 0; i < tries && !full(); i++) {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const id = randomUUID();
    await request(cluster.url, "GET", "/info", undefined, { "x-request-id": id }, agent);
    const line = await cluster.waitForLog((l) => l.msg === "request" && l.request_id === id, 5_000);
    const worker = line.worker as number;
    const list = byWorker.get(worker) ?? [];
    if (list.length >= perWorker || (!byWorker.has(worker) && byWorker.size >= workers)) {
      agent.destroy();
      continue;
    }
    list.push({ worker, agent });
    byWorker.set(worker, list);
  }
  if (!full()) throw new Error(`could not open ${perWorker} connection(s) to each of ${workers} workers`);
  return [...byWorker.values()];
}

/** The pid of a worker (cluster worker id), from its "listening" line. */
export function pidOf(cluster: Cluster, worker: number): number {
  const line = cluster.logs.find((l) => l.msg === "listening" && l.worker === worker);
  if (!line) throw new Error(`worker ${worker} has not listened`);
  return line.pid as number;
}

export function closePinned(pinned: PinnedConnection[][]): void {
  for (const list of pinned) for (const { agent } of list) agent.destroy();
}

/** Two identical slow invokes on one new conversation at the same moment, each over its own connection. */
export function pairOver(base: string, agents: readonly [http.Agent, http.Agent], ms = 1000): Promise<Reply[]> {
  const thread = randomUUID();
  const body = { input: { message: `sleep ${ms}` }, thread_id: thread };
  return Promise.all(agents.map((agent) => request(base, "POST", "/slow-agent/invoke", body, {}, agent)));
}
