/**
 * Memory over a long run (`npm run bench:memory`): the real service (bin/agenthost, one worker,
 * the fake model) per backend, its processes' resident memory (VmRSS) read from /proc:
 *
 *   1. fresh: once ready and 10 s idle;
 *   2. start: after one conversation of each kind below and 10 s idle (the code every route loads
 *      on first use is in);
 *   3. `--runs` runs (default 100,000) at c=`--concurrency` (default 8), mixed: each client goes
 *      round the kinds of conversation, four turns each, then deletes the thread
 *      (`DELETE /threads/{id}`), so what is stored stays bounded and what grows is what the
 *      service keeps: agenthost's own `/invoke` and `/stream` turns, the Platform's `runs/wait`,
 *      `runs/stream` with `values` and with `messages-tuple`, and background runs joined by their
 *      client;
 *   4. after: `--idle` seconds idle (default 120).
 *
 * Goals: the worker's RSS idle <= 150 MB; after, within 10 % of the start, on each backend.
 *
 *   npm run bench:memory
 *   npm run bench:memory -- --backends=filedb --runs=20000 --idle=60
 */
import { randomUUID } from "node:crypto";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { openBackend } from "./backends.ts";
import { descendantPids, pinLoadGenerator, pinned, send, startService, type Server } from "./load-service.ts";

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const backends = (args.backends ?? "memory,filedb,serverdb").split(",");
const totalRuns = Number(args.runs ?? 100_000);
const idleSeconds = Number(args.idle ?? 120);
const concurrency = Number(args.concurrency ?? 8);
const TURNS = 4;
const root = path.resolve(import.meta.dirname, "..");

pinLoadGenerator();
execFileSync(process.execPath, [path.join(root, "scripts/build.mjs"), "--if-stale"], { stdio: "inherit" });

const QUESTION = "Hello! Please answer briefly.";
const platformInput = { messages: [{ role: "user", content: QUESTION }] };

/** One turn of a kind of conversation on thread `threadId`. */
type Turn = (agent: http.Agent, port: number, threadId: string) => Promise<unknown>;
const post = (agent: http.Agent, port: number, route: string, body: unknown) => send(agent, port, "POST", route, JSON.stringify(body));
const KINDS: ReadonlyArray<readonly [string, Turn]> = [
  ["invoke", (a, p, thread) => post(a, p, "/chatbot-agent/invoke", { input: { message: QUESTION }, thread_id: thread })],
  ["stream", (a, p, thread) => post(a, p, "/chatbot-agent/stream", { input: { message: QUESTION }, thread_id: thread, stream_tokens: true })],
  ["runs/wait", (a, p, thread) => post(a, p, `/threads/${thread}/runs/wait`, { assistant_id: "chatbot-agent", input: platformInput, if_not_exists: "create" })],
  [
    "runs/stream values",
    (a, p, thread) => post(a, p, `/threads/${thread}/runs/stream`, { assistant_id: "chatbot-agent", input: platformInput, if_not_exists: "create", stream_mode: ["values"] }),
  ],
  [
    "runs/stream messages-tuple",
    (a, p, thread) =>
      post(a, p, `/threads/${thread}/runs/stream`, { assistant_id: "chatbot-agent", input: platformInput, if_not_exists: "create", stream_mode: ["messages-tuple"] }),
  ],
  [
    "background, joined",
    async (a, p, thread) => {
      const run = JSON.parse(await post(a, p, `/threads/${thread}/runs`, { assistant_id: "chatbot-agent", input: platformInput, if_not_exists: "create" })) as { run_id: string };
      await send(a, p, "GET", `/threads/${thread}/runs/${run.run_id}/join`);
    },
  ],
];

/** One conversation of `kind`: TURNS turns, then its thread deleted. */
async function conversation(agent: http.Agent, port: number, kind: number): Promise<void> {
  const threadId = randomUUID();
  for (let turn = 0; turn < TURNS; turn++) await KINDS[kind]![1](agent, port, threadId);
  await send(agent, port, "DELETE", `/threads/${threadId}`);
}

/** Resident memory (MB) of the service's primary and of its workers (every descendant), from /proc. */
function residentMb(primary: number): { primary: number; workers: number } {
  const rss = (pid: number) => {
    const line = fs.readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmRSS:\s+(\d+) kB$/m);
    return line ? Number(line[1]) / 1024 : 0;
  };
  return { primary: rss(primary), workers: descendantPids(primary).reduce((sum, pid) => sum + rss(pid), 0) };
}

const mb = (value: number) => value.toFixed(0);
const lines: string[] = [];
console.log(
  `Memory over time: ${totalRuns} mixed runs at c=${concurrency} (${KINDS.map(([name]) => name).join(", ")}; ${TURNS} turns a thread, then deleted), ` +
    `then ${idleSeconds} s idle${pinned ? "; the service on core 0, load on core 1" : ""}.\nGoals: worker RSS idle <= 150 MB; after, within 10 % of the start.\n`,
);
for (const kind of backends) {
  const backend = await openBackend(kind);
  let server: Server | undefined;
  try {
    server = await startService(root, backend.env);
    const { port, pid } = server;
    await sleep(10_000);
    const fresh = residentMb(pid);
    const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
    for (let i = 0; i < KINDS.length; i++) await conversation(agent, port, i);
    await sleep(10_000);
    const start = residentMb(pid);
    const began = performance.now();
    let runs = 0;
    let next = 0;
    let peak = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (runs < totalRuns) {
          runs += TURNS;
          await conversation(agent, port, next++ % KINDS.length);
          if (runs % 5_000 < TURNS) peak = Math.max(peak, residentMb(pid).workers);
        }
      }),
    );
    const busySeconds = (performance.now() - began) / 1_000;
    agent.destroy();
    const loaded = residentMb(pid);
    await sleep(idleSeconds * 1_000);
    const after = residentMb(pid);
    lines.push(
      `| ${kind} | ${mb(fresh.workers)} | ${mb(start.workers)} | ${mb(Math.max(peak, loaded.workers))} | ${mb(after.workers)} | ` +
        `${(((after.workers - start.workers) / start.workers) * 100).toFixed(1)} % | ${mb(start.primary)} / ${mb(after.primary)} | ${(runs / busySeconds).toFixed(0)} |`,
    );
    console.log(lines.at(-1));
  } finally {
    await server?.stop();
    await backend.cleanup();
  }
}
console.log("\n| backend | worker RSS fresh MB | start MB | peak under load MB | after idle MB | after to start | primary start / after MB | runs/s |");
console.log("|---|---|---|---|---|---|---|---|");
for (const line of lines) console.log(line);
