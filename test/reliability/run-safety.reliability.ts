// Issue 29 items 2, 4 and 5 at scale, on bin/agenthost with two workers:
//
// - Item 2: NEW_CONVERSATION_RACES (40) per backend (SQLite, PostgreSQL): an invoke that starts a
//   conversation (no thread_id; two checkpointed steps, then a wait), raced by an append and a second
//   run on its thread as soon as the conversation list shows it. With the default queue wait the two
//   wait for the first run and land after it; every write answered 2xx must be in the conversation
//   afterwards. Before the fix they were accepted at once and overwritten (7 of 7 lost).
// - Item 4: DISCONNECTS (60) invokes whose clients leave mid-run, half with an Idempotency-Key. Runs
//   counted as run_failed and lines logged at error level must be 0; every keyed retry must get the
//   run's answer. Before: each was a 500 run_failed, logged as an error, replayed to every retry.
// - Item 5: HALF_SENT_CANCELS (48) cancels whose bodies never finish, then CANCELS (20) complete ones:
//   every complete cancel answered 200. Before: 12 half-sent cancels made every cancel 503 for 30 s.
//
// The figures are written before the assertions, so a run against an older build records them too.
//
//   npm run test:reliability -- run-safety
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import net from "node:net";
import { after, describe, test } from "node:test";
import pg from "pg";
import { eventually, metric, request, scrape, startCluster, TOKEN, type Cluster } from "../cluster/cluster-helper.ts";
import { DATABASE_URL } from "../helpers/postgres.ts";
import { recordFigures } from "./figures.ts";

const RACES = Number(process.env.NEW_CONVERSATION_RACES ?? 40);
const DISCONNECTS = Number(process.env.DISCONNECTS ?? 60);
const HALF_SENT = Number(process.env.HALF_SENT_CANCELS ?? 48);
const CANCELS = Number(process.env.CANCELS ?? 20);
const STEPS = "./test/fixtures/run-control-agents.ts:stepsAgent";
const SLOW = "./test/fixtures/agents/slow-agent.ts:slowAgent";

const lines: string[] = [];
const data: Record<string, unknown> = {};
after(() => recordFigures("run-safety", { title: "Run safety (test/reliability/run-safety.reliability.ts)", lines, data }));

/** The cluster tests' own poll on observable state, with the longer bound these runs need. */
const until = (check: () => Promise<boolean>, what: string) => eventually(check, 30_000, what, 20);

async function history(cluster: Cluster, thread: string): Promise<string[]> {
  const page = (await request(cluster.url, "GET", `/steps-agent/history?thread_id=${thread}&limit=1000`)).json<{ messages: Array<{ content: unknown }> }>();
  return page.messages.map((message) => String(message.content));
}

describe("a new conversation's run, raced", () => {
  const schema = `t_rel_race_${process.pid}`;
  after(async () => {
    const client = new pg.Client({ connectionString: DATABASE_URL });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
  });

  for (const backend of ["filedb", "serverdb"] as const) {
    test(`${RACES} races on ${backend}: no write answered 2xx is lost`, async () => {
      const env: Record<string, string> = { AGENT_PATHS: JSON.stringify([STEPS]), THREAD_QUEUE_TIMEOUT: "" };
      if (backend === "serverdb") Object.assign(env, { MEMORY_BACKEND: "serverdb", DATABASE_URL, SERVERDB_SCHEMA: schema });
      const cluster = await startCluster(env);
      let raced = 0;
      let accepted = 0;
      let lost = 0;
      try {
        for (let i = 0; i < RACES; i++) {
          const word = `race-${i}-${randomUUID().slice(0, 8)}`;
          const first = request(cluster.url, "POST", "/steps-agent/invoke", { input: { message: word }, agent_config: { steps: 2, sleep_ms: 300 } });
          let thread: string | undefined;
          await until(async () => {
            const page = (await request(cluster.url, "GET", "/steps-agent/threads?limit=100")).json<{ threads: Array<{ thread_id: string; title: string }> }>();
            thread = page.threads.find((entry) => entry.title === word)?.thread_id;
            return thread !== undefined;
          }, "the new conversation listed");
          const [appended, second] = await Promise.all([
            request(cluster.url, "POST", "/steps-agent/history/add_messages", { thread_id: thread, messages: [{ type: "human", content: `${word} appended` }] }),
            request(cluster.url, "POST", "/steps-agent/invoke", { input: { message: `${word} second` }, thread_id: thread, agent_config: { steps: 1 } }),
          ]);
          const answered = await first;
          assert.equal(answered.status, 200);
          raced++;
          const kept = await history(cluster, thread!);
          for (const [reply, text] of [[appended, `${word} appended`], [second, `${word} second`]] as const) {
            if (reply.status >= 200 && reply.status < 300) {
              accepted++;
              if (!kept.includes(text)) lost++;
            }
          }
          // The first run's steps are all there too.
          if (!["step 1", "step 2", "finished"].every((step) => kept.includes(step))) lost++;
        }
      } finally {
        await cluster.stop("SIGKILL");
      }
      lines.push(`item 2, ${backend}: ${raced} new conversations raced by an append and a run; ${accepted} of those writes answered 2xx, ${lost} lost`);
      data[`race_${backend}`] = { raced, accepted, lost };
      assert.equal(lost, 0);
    });
  }
});

describe("invokes whose clients leave", () => {
  test(`${DISCONNECTS} disconnects, half with an Idempotency-Key`, async () => {
    const cluster = await startCluster({ AGENT_PATHS: JSON.stringify([SLOW]) });
    const keyed: Array<{ key: string; body: unknown }> = [];
    try {
      const before = await scrape(cluster);
      for (let i = 0; i < DISCONNECTS; i++) {
        const body = { input: { message: "sleep 400" }, thread_id: `gone-${i}-${randomUUID()}` };
        const headers: Record<string, string> = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
        if (i % 2 === 0) {
          headers["idempotency-key"] = randomUUID();
          keyed.push({ key: headers["idempotency-key"], body });
        }
        const running = await scrape(cluster);
        const leave = new AbortController();
        const sent = fetch(`${cluster.url}/slow-agent/invoke`, { method: "POST", headers, body: JSON.stringify(body), signal: leave.signal }).catch(() => undefined);
        // Leave once the run holds its conversation (the lock gauge counts it).
        await until(async () => metric(await scrape(cluster), "agenthost_checkpoint_operation_duration_seconds_count", { backend: "filedb", operation: "put" }) > metric(running, "agenthost_checkpoint_operation_duration_seconds_count", { backend: "filedb", operation: "put" }), "the run started");
        leave.abort();
        await sent;
      }
      let answeredRetries = 0;
      for (const { key, body } of keyed) {
        // 409 idempotency_in_progress until the run the client left has ended.
        let reply = await request(cluster.url, "POST", "/slow-agent/invoke", body, { "idempotency-key": key });
        await until(async () => {
          if (reply.status !== 409) return true;
          reply = await request(cluster.url, "POST", "/slow-agent/invoke", body, { "idempotency-key": key });
          return reply.status !== 409;
        }, "the kept answer");
        if (reply.status === 200 && /^slept 400 ms/.test(reply.json<{ content: string }>().content)) answeredRetries++;
      }
      const afterwards = await scrape(cluster);
      const count = (outcome: string) => metric(afterwards, "agenthost_runs_total", { agent: "slow-agent", outcome }) - metric(before, "agenthost_runs_total", { agent: "slow-agent", outcome });
      const failed = count("run_failed");
      const disconnected = count("client_disconnected");
      const errors = cluster.logs.filter((line) => Number(line.level) >= 50).length;
      lines.push(
        `item 4: ${DISCONNECTS} invokes left mid-run: ${disconnected} runs counted client_disconnected, ${failed} run_failed, ${errors} lines logged at error level; ` +
          `${answeredRetries} of ${keyed.length} keyed retries got the run's answer`,
      );
      data.disconnects = { disconnects: DISCONNECTS, disconnected, failed, errors, keyed: keyed.length, answeredRetries };
      assert.equal(failed, 0);
      assert.equal(errors, 0);
      assert.equal(answeredRetries, keyed.length);
    } finally {
      await cluster.stop("SIGKILL");
    }
  });
});

describe("cancels whose bodies never finish", () => {
  test(`${HALF_SENT} half-sent cancels, then ${CANCELS} complete ones`, async () => {
    const cluster = await startCluster({ WEB_CONCURRENCY: "1" });
    const sockets: net.Socket[] = [];
    try {
      const { port } = new URL(cluster.url);
      for (let i = 0; i < HALF_SENT; i++) {
        const socket = net.connect(Number(port), "127.0.0.1");
        socket.on("error", () => {});
        socket.write(
          `POST /cancel HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 64\r\n\r\n{"thread_id":`,
        );
        sockets.push(socket);
      }
      await until(async () => metric(await scrape(cluster), "agenthost_http_active_requests") >= HALF_SENT, "the half-sent cancels received");
      const statuses: number[] = [];
      const started = performance.now();
      for (let i = 0; i < CANCELS; i++) statuses.push((await request(cluster.url, "POST", "/cancel", { thread_id: `idle-${i}` })).status);
      const ms = (performance.now() - started) / CANCELS;
      const ok = statuses.filter((status) => status === 200).length;
      lines.push(`item 5: with ${HALF_SENT} half-sent cancels held open, ${ok} of ${CANCELS} complete cancels answered 200 (${ms.toFixed(1)} ms each)`);
      data.cancels = { halfSent: HALF_SENT, cancels: CANCELS, ok };
      assert.equal(ok, CANCELS);
    } finally {
      for (const socket of sockets) socket.destroy();
      await cluster.stop("SIGKILL");
    }
  });
});
