/**
 * The load side of bench/peer.ts: what one run is on each server in each mode (the route and the
 * body), a closed-loop load generator that keeps `concurrency` requests outstanding and measures a
 * window of it (runs per second, the latency of every run that ended in the window, CPU time per run
 * of the server's whole process tree from /proc), and where this process runs (taskset).
 */
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import { FAKE_MODEL_ANSWER } from "../src/models/fake-chat-model.ts";
import { TOKEN, treeCpuMs } from "./load-service.ts";

const QUESTION = "Hello! Please answer briefly.";
const CLOCK_TICKS_PER_SECOND = 100;

/** One request of a mode on one server: where it goes and what it sends, for a new thread each time. */
export interface RunRequest {
  readonly path: (threadId: string) => string;
  readonly body: (threadId: string) => unknown;
  /** What the whole answer holds when the run did what it should (checked once per mode and server). */
  readonly expect: string;
}

export interface Mode {
  /** How --modes names it. */
  readonly key: string;
  readonly name: string;
  readonly agenthost: RunRequest;
  readonly peer: RunRequest;
}

/** A Platform run on a thread that does not exist yet (both servers create it: `if_not_exists`). */
function platformRun(route: "wait" | "stream", streamMode?: string[]): RunRequest {
  const tokensOnly = streamMode?.length === 1 && streamMode[0] === "messages-tuple";
  return {
    path: (threadId) => `/threads/${threadId}/runs/${route}`,
    body: () => ({
      assistant_id: "chatbot-agent",
      input: { messages: [{ role: "user", content: QUESTION }] },
      if_not_exists: "create",
      ...(streamMode ? { stream_mode: streamMode } : {}),
    }),
    // Streamed token by token, the answer never appears whole: its last token does.
    expect: tokensOnly ? "model." : FAKE_MODEL_ANSWER,
  };
}

/**
 * The modes measured. agenthost's own routes have no counterpart on LangGraph's server: there they
 * are measured against the Platform route that does the same (a run that answers at its end; a run
 * streamed with its updates and its tokens, the modes agenthost's own stream runs the graph with).
 */
export const MODES: readonly Mode[] = [
  {
    key: "invoke",
    name: "invoke",
    agenthost: { path: () => "/chatbot-agent/invoke", body: () => ({ input: { message: QUESTION } }), expect: FAKE_MODEL_ANSWER },
    peer: platformRun("wait"),
  },
  {
    key: "stream",
    name: "stream",
    agenthost: { path: () => "/chatbot-agent/stream", body: () => ({ input: { message: QUESTION }, stream_tokens: true }), expect: "model." },
    peer: platformRun("stream", ["updates", "messages-tuple"]),
  },
  { key: "wait", name: "runs/wait", agenthost: platformRun("wait"), peer: platformRun("wait") },
  { key: "values", name: "runs/stream values", agenthost: platformRun("stream", ["values"]), peer: platformRun("stream", ["values"]) },
  { key: "messages-tuple", name: "runs/stream messages-tuple", agenthost: platformRun("stream", ["messages-tuple"]), peer: platformRun("stream", ["messages-tuple"]) },
];

/** A server under test: its port and the pid at the top of its process tree. */
export interface Target {
  readonly port: number;
  readonly pid: number;
}

interface Answer {
  readonly status: number;
  readonly body?: string;
}

function send(agent: http.Agent, target: Target, run: RunRequest, keepBody: boolean): Promise<Answer> {
  const threadId = randomUUID();
  const body = JSON.stringify(run.body(threadId));
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        agent,
        host: "127.0.0.1",
        port: target.port,
        method: "POST",
        path: run.path(threadId),
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => {
          if (keepBody) chunks.push(chunk);
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: keepBody ? Buffer.concat(chunks).toString("utf8") : undefined }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** One run, its whole answer checked: the server answers this mode as it should. */
export async function check(target: Target, run: RunRequest, who: string): Promise<void> {
  const agent = new http.Agent({ keepAlive: false });
  try {
    const answer = await send(agent, target, run, true);
    if (answer.status !== 200 || !answer.body?.includes(run.expect)) {
      throw new Error(`${who} answered ${run.path("{thread}")} with ${answer.status}: ${answer.body?.slice(0, 300)}`);
    }
  } finally {
    agent.destroy();
  }
}

/** CPU time (ms) the whole machine spent busy, all cores, from /proc/stat. */
function machineBusyMs(): number {
  const fields = fs.readFileSync("/proc/stat", "utf8").split("\n", 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = fields as [number, number, number, number, number, number, number, number];
  return ((user + nice + system + irq + softirq + steal) * 1_000) / CLOCK_TICKS_PER_SECOND;
}

const ownCpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1_000;
};

/** The 1-minute load average. */
export const loadAverage = () => Number(fs.readFileSync("/proc/loadavg", "utf8").split(" ")[0]);

/** What one window of load measured on one server. */
export interface Sample {
  readonly perSecond: number;
  readonly cpuMsPerRun: number;
  /** ms, of the runs that ended in the window. */
  readonly p50: number;
  readonly p99: number;
  readonly runs: number;
  /** Answers 503 (shed, Retry-After) per run that completed. */
  readonly shedPerRun: number;
  /** Answers neither 200 nor 503. */
  readonly errors: number;
  /** CPU the rest of the machine used meanwhile (other processes), in cores. */
  readonly otherCores: number;
  readonly loadAverage: number;
}

export interface WindowOptions {
  readonly concurrency: number;
  /** The window lasts at least this long… */
  readonly seconds: number;
  /** …and holds at least this many runs. */
  readonly minRuns: number;
}

/** p-quantile (0..1) of sorted values, nearest rank. */
const quantile = (sorted: number[], q: number) => sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] ?? NaN;

/**
 * Keep `concurrency` requests outstanding on `target` (each on a new thread; a request shed with
 * 503 is sent again at once), let the load settle (every client has had an answer, and 300 ms),
 * then measure from one answer to a later one: at least `seconds` and `minRuns` runs apart. Then
 * stop sending and wait for the requests still out, so nothing is left running when the other
 * server is measured.
 */
export async function measure(target: Target, run: RunRequest, options: WindowOptions): Promise<Sample> {
  const { concurrency, seconds, minRuns } = options;
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const startedAt = performance.now();
  let phase: "settle" | "window" | "drain" = "settle";
  let settled = 0;
  let windowStart = 0;
  let windowEnd = 0;
  let cpuStart = 0;
  let cpuEnd = 0;
  let machineStart = 0;
  let machineEnd = 0;
  let ownStart = 0;
  let ownEnd = 0;
  let shed = 0;
  let errors = 0;
  const latencies: number[] = [];
  const deadline = startedAt + 120_000 + seconds * 1_000;

  const answered = (status: number, latency: number, at: number) => {
    if (phase === "settle") {
      if (++settled >= concurrency && at - startedAt >= 300) {
        phase = "window";
        windowStart = at;
        cpuStart = treeCpuMs(target.pid);
        machineStart = machineBusyMs();
        ownStart = ownCpuMs();
      }
      return;
    }
    if (phase !== "window") return;
    if (status === 200) latencies.push(latency);
    else if (status === 503) shed++;
    else errors++;
    if ((at - windowStart >= seconds * 1_000 && latencies.length >= minRuns) || at > deadline) {
      phase = "drain";
      windowEnd = at;
      cpuEnd = treeCpuMs(target.pid);
      machineEnd = machineBusyMs();
      ownEnd = ownCpuMs();
    }
  };

  try {
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (phase !== "drain") {
          const sentAt = performance.now();
          const { status } = await send(agent, target, run, false);
          const at = performance.now();
          answered(status, at - sentAt, at);
        }
      }),
    );
  } finally {
    agent.destroy();
  }
  const elapsed = windowEnd - windowStart;
  const serverCpu = cpuEnd - cpuStart;
  const sorted = latencies.sort((a, b) => a - b);
  return {
    perSecond: (latencies.length * 1_000) / elapsed,
    cpuMsPerRun: serverCpu / latencies.length,
    p50: quantile(sorted, 0.5),
    p99: quantile(sorted, 0.99),
    runs: latencies.length,
    shedPerRun: shed / latencies.length,
    errors,
    otherCores: Math.max(0, machineEnd - machineStart - serverCpu - (ownEnd - ownStart)) / elapsed,
    loadAverage: loadAverage(),
  };
}

/** Move this process, every thread of it, onto `core`. */
export function moveLoadGenerator(core: number): void {
  execFileSync("taskset", ["-a", "-cp", String(core), String(process.pid)], { stdio: "ignore" });
}
