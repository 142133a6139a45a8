/**
 * Measuring for the retention benchmark (retention-scale.ts): the service under test as a child
 * process (retention-service.ts) and its IPC answers, timed requests over one keep-alive agent, an
 * open-loop load of invokes at a fixed rate, and percentiles.
 */
import { fork, type ChildProcess } from "node:child_process";
import http from "node:http";
import os from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { AGENT, TOKEN } from "./retention-fill.ts";
import type { Request, Stats } from "./retention-service.ts";

export interface ServiceUnderTest {
  readonly port: number;
  ask(op: Request["op"], fields?: Partial<Request>): Promise<unknown>;
  stats(): Promise<Stats>;
  close(): Promise<void>;
}

/** The service on the database of `env`, once it listens. */
export async function startServiceUnderTest(env: Record<string, string>): Promise<ServiceUnderTest> {
  const child: ChildProcess = fork(fileURLToPath(new URL("./retention-service.ts", import.meta.url)), [], {
    execArgv: ["--import", "tsx"],
    env: { ...process.env, LANGCHAIN_CALLBACKS_BACKGROUND: "false", USE_FAKE_MODEL: "true", AUTH_SECRET: TOKEN, ...env },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const waiting = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  let ids = 0;
  const port = await new Promise<number>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`the service exited (${code}) while starting`)));
    child.on("message", (message: { ready?: boolean; port?: number; id?: number; result?: unknown; error?: string }) => {
      if (message.ready) return resolve(message.port!);
      const pending = waiting.get(message.id!);
      waiting.delete(message.id!);
      if (message.error) pending?.reject(new Error(message.error));
      else pending?.resolve(message.result);
    });
  });
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  const ask = (op: Request["op"], fields: Partial<Request> = {}) =>
    new Promise<unknown>((resolve, reject) => {
      const id = ++ids;
      waiting.set(id, { resolve, reject });
      child.send({ ...fields, id, op });
    });
  return {
    port,
    ask,
    stats: () => ask("stats") as Promise<Stats>,
    close: async () => {
      await ask("close");
      await exited;
    },
  };
}

export interface Timed {
  readonly status: number;
  readonly ms: number;
  readonly body: string;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

/** One request to the service with the shared token; how long until its whole answer arrived. */
export function timed(port: number, method: string, path: string, body?: unknown, startedAt = performance.now()): Promise<Timed> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        agent,
        host: "127.0.0.1",
        port,
        method,
        path,
        headers: { authorization: `Bearer ${TOKEN}`, ...(payload ? { "content-type": "application/json", "content-length": Buffer.byteLength(payload) } : {}) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - startedAt, body: Buffer.concat(chunks).toString() }));
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

/** `read` must answer 200; its answer. */
export async function ok(read: Promise<Timed>, what: string): Promise<Timed> {
  const answer = await read;
  if (answer.status !== 200) throw new Error(`${what}: ${answer.status} ${answer.body.slice(0, 300)}`);
  return answer;
}

export const percentile = (values: readonly number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN;
};
export const median = (values: readonly number[]) => percentile(values, 0.5);

/** The one-minute load average now. */
export const load1 = () => os.loadavg()[0]!;

export interface LoadWindow {
  /** Milliseconds from each request's scheduled start to the end of its answer (answers of 200 only). */
  readonly latencies: number[];
  /** Other answers by status (0: no answer). */
  readonly errors: Record<number, number>;
  readonly load: number;
}

/**
 * Invokes at `rate` per second for `seconds`, each on a conversation `pick` names, open loop: each
 * starts on schedule whatever the others do, and its latency counts from its scheduled start, so a
 * stalled service shows as latency rather than as fewer requests.
 */
export async function openLoad(port: number, rate: number, seconds: number, pick: () => { userId: string; threadId: string }): Promise<LoadWindow> {
  const latencies: number[] = [];
  const errors: Record<number, number> = {};
  const failed = (status: number) => void (errors[status] = (errors[status] ?? 0) + 1);
  const start = performance.now();
  const count = Math.round(rate * seconds);
  const inFlight: Array<Promise<void>> = [];
  for (let i = 0; i < count; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const { userId, threadId } = pick();
    const body = { input: { message: "And the next step?" }, thread_id: threadId, user_id: userId };
    inFlight.push(
      timed(port, "POST", `/${AGENT}/invoke`, body, due).then(
        (answer) => (answer.status === 200 ? void latencies.push(answer.ms) : failed(answer.status)),
        () => failed(0),
      ),
    );
  }
  await Promise.all(inFlight);
  return { latencies, errors, load: load1() };
}
