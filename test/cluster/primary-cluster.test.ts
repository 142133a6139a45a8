// bin/agenthost with WEB_CONCURRENCY=2 and primary-brokered locks (no REDIS_URL), one cluster for
// the whole file, in this order: exact metric counts, one 409 per concurrent pair, SIGKILL of a
// worker (replaced, counted, locks free at once), SIGTERM during a stream.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import http from "node:http";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import {
  eventually,
  invoke,
  metric,
  request,
  scrape,
  startCluster,
  workersServing,
  type Cluster,
  type Reply,
  closePinned,
  concurrentPairs,
  TOKEN,
  pairOver,
  pidOf,
  pinnedConnections,
} from "./cluster-helper.ts";

describe("cluster with primary-brokered locks", () => {
  let cluster: Cluster;
  let dir: string;

  /** Checkpoints the workers have written: a run writes its input's before its agent's node starts. */
  const checkpointsWritten = async () =>
    metric(await scrape(cluster), "agenthost_checkpoint_operation_duration_seconds_count", { backend: "filedb", operation: "put" });

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "agenthost-cluster-"));
    cluster = await startCluster({ MEMORY_BACKEND: "filedb", FILEDB_DB_PATH: path.join(dir, "db.sqlite") });
  });
  after(async () => {
    await cluster?.stop("SIGKILL");
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test("/metrics on METRICS_PORT sums both workers' counters exactly", async () => {
    const ids = new Set<string>();
    const tagged = () => {
      const id = randomUUID();
      ids.add(id);
      return { "x-request-id": id };
    };
    // The kernel spreads new connections (SCHED_NONE) unevenly; connections accepted by each worker
    // make sure both serve (their /info probes are not among the counts below).
    const [zero, one] = await pinnedConnections(cluster, 2, 2);
    const on = [zero!, one!];
    for (let i = 0; i < 3; i++) {
      const body = { input: { message: "hello" }, thread_id: randomUUID() };
      const res = await request(cluster.url, "POST", "/chatbot-agent/invoke", body, tagged(), on[i % 2]![0]!.agent);
      assert.equal(res.status, 200, res.body);
    }
    const pairs = await Promise.all(
      [0, 1].map(async (i) => {
        const body = { input: { message: "sleep 800" }, thread_id: randomUUID() };
        return Promise.all(on.map((list) => request(cluster.url, "POST", "/slow-agent/invoke", body, tagged(), list[i]!.agent)));
      }),
    );
    closePinned(on);
    for (const pair of pairs) assert.deepEqual(pair.map((r) => r.status).sort(), [200, 409]);
    const unauthorized = await request(cluster.url, "POST", "/invoke", { input: { message: "x" } }, { authorization: "Bearer wrong" });
    assert.equal(unauthorized.status, 401);

    // Request log lines are written when the response closes; wait until all are in.
    await eventually(() => workersServing(cluster.logs, ids).size === 2 && [...ids].every((id) => cluster.logs.some((l) => l.request_id === id)), 5_000, "request log lines");
    assert.equal(workersServing(cluster.logs, ids).size, 2, "both workers served requests");
    const line = cluster.logs.find((l) => l.msg === "request" && l.agent === "slow-agent")!;
    for (const field of ["request_id", "worker", "route", "agent", "status", "duration_ms"]) assert.ok(field in line, field);

    const m = await scrape(cluster);
    const invokeRoute = { route: "/{agent_id}/invoke", method: "POST" };
    assert.equal(metric(m, "agenthost_http_requests_total", { ...invokeRoute, status: "200" }), 5);
    assert.equal(metric(m, "agenthost_http_requests_total", { ...invokeRoute, status: "409" }), 2);
    // Refused before its route was reached, the 401 still carries the route's label.
    assert.equal(metric(m, "agenthost_http_requests_total", { route: "/invoke", method: "POST", status: "401" }), 1);
    assert.equal(metric(m, "agenthost_http_requests_total", { route: "unmatched", method: "POST", status: "401" }), 0);
    assert.equal(metric(m, "agenthost_http_request_duration_seconds_count", invokeRoute), 7);
    assert.equal(metric(m, "agenthost_http_active_requests"), 0);
    assert.equal(metric(m, "agenthost_runs_total", { agent: "chatbot-agent", outcome: "ok" }), 3);
    assert.equal(metric(m, "agenthost_runs_total", { agent: "slow-agent", outcome: "ok" }), 2);
    assert.equal(metric(m, "agenthost_run_duration_seconds_count", { agent: "chatbot-agent", outcome: "ok" }), 3);
    assert.equal(metric(m, "agenthost_model_call_duration_seconds_count", { agent: "chatbot-agent", provider: "fake", model: "fake", outcome: "ok" }), 3);
    // One build, however many workers report it: the gauge is not summed.
    const builds = [...m.keys()].filter((key) => key.startsWith("agenthost_build_info{"));
    assert.equal(builds.length, 1, builds.join(" "));
    assert.equal(m.get(builds[0]!), 1);
    assert.match(builds[0]!, /backend="filedb"/);
    assert.ok(builds[0]!.includes(`node_version="${process.versions.node}"`), builds[0]);
    // The fake model counts 5 tokens in ("hello": one per four characters, rounded up, + 3) and 9 out
    // per answer; the slow agent reports 5 and 3.
    assert.equal(metric(m, "agenthost_tokens_total", { agent: "chatbot-agent", direction: "in" }), 15);
    assert.equal(metric(m, "agenthost_tokens_total", { agent: "chatbot-agent", direction: "out" }), 27);
    assert.equal(metric(m, "agenthost_tokens_total", { agent: "slow-agent", direction: "in" }), 10);
    assert.equal(metric(m, "agenthost_tokens_total", { agent: "slow-agent", direction: "out" }), 6);
    assert.equal(metric(m, "agenthost_lock_conflicts_total", { reason: "busy" }), 2);
    assert.equal(metric(m, "agenthost_lock_waits_total"), 0);
    assert.equal(metric(m, "agenthost_admission_rejections_total", { reason: "service_busy" }), 0);
    assert.equal(metric(m, "agenthost_deadline_expiries_total"), 0);
    assert.ok(m.has('agenthost_stream_cuts_total{reason="slow_consumer"}'), "the workers' stream cuts reach the primary's exposition");
    assert.equal(metric(m, "agenthost_worker_restarts_total", { reason: "exited" }), 0);
    assert.equal(metric(m, "agenthost_workers"), 2);
    assert.ok(metric(m, "agenthost_checkpoint_operation_duration_seconds_count", { backend: "filedb", operation: "put" }) > 0);
    assert.ok(metric(m, "process_cpu_seconds_total", { worker: "0" }) > 0, "process metrics of worker 0");
    assert.ok(metric(m, "process_cpu_seconds_total", { worker: "1" }) > 0, "process metrics of worker 1");
    for (const key of m.keys()) assert.doesNotMatch(key, /thread|user_id|run_id/);
  });

  test("two concurrent requests on one conversation: exactly one 409, whichever workers serve them", async () => {
    const { pairs } = await concurrentPairs(cluster.url);
    // And pairs whose two requests certainly reach two different workers.
    const [zero, one] = await pinnedConnections(cluster, 2, 2);
    pairs.push(...(await Promise.all([0, 1].map((i) => pairOver(cluster.url, [zero![i]!.agent, one![i]!.agent])))));
    closePinned([zero!, one!]);
    for (const pair of pairs) {
      assert.deepEqual(pair.map((r) => r.status).sort(), [200, 409]);
      assert.equal(pair.find((r) => r.status === 409)!.json().error_code, "conversation_busy");
    }
  });

  test("a client's next request never finds its own conversation busy: after add, clear, invoke or the stream's final message", async () => {
    const conflicts: string[] = [];
    const note = (step: string, reply: Reply) => {
      if (reply.status !== 200 && reply.status !== 201) conflicts.push(`${step}: ${reply.status} ${reply.body}`);
    };
    /** Stream a turn and, the moment the final message arrives (before [DONE]), send the next turn. */
    const streamThenInvoke = (thread: string) =>
      new Promise<Reply>((resolve, reject) => {
        const payload = JSON.stringify({ input: { message: "stream" }, thread_id: thread, stream_tokens: false });
        const req = http.request(
          new URL("/chatbot-agent/stream", cluster.url),
          { method: "POST", agent: false, headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" } },
          (res) => {
            let text = "";
            let next: Promise<Reply> | undefined;
            res.setEncoding("utf8").on("data", (chunk: string) => {
              text += chunk;
              if (!next && text.includes('"type":"message"')) next = invoke(cluster.url, "chatbot-agent", thread, "right after");
            });
            res.on("end", () => {
              if (next) void next.then(resolve, reject);
              else reject(new Error(`no message in ${text}`));
            });
          },
        );
        req.on("error", reject);
        req.end(payload);
      });
    for (let i = 0; i < 60; i++) {
      const thread = randomUUID();
      note("add", await request(cluster.url, "POST", "/chatbot-agent/history/add_messages", { thread_id: thread, messages: [{ type: "human", content: "x" }] }));
      note("invoke after add", await invoke(cluster.url, "chatbot-agent", thread, "hello"));
      note("clear after invoke", await request(cluster.url, "DELETE", "/chatbot-agent/history/clear", { thread_id: thread }));
      note("add after clear", await request(cluster.url, "POST", "/chatbot-agent/history/add_messages", { thread_id: thread, messages: [{ type: "human", content: "y" }] }));
      note("invoke after the stream's final message", await streamThenInvoke(thread));
    }
    assert.deepEqual(conflicts, []);
  });

  test("a worker killed with SIGKILL is replaced within 2 s, counted, and its locks are free at once", async () => {
    // One run on each worker, over a connection each worker accepted.
    const pinned = (await pinnedConnections(cluster)).map(([connection]) => connection!);
    const first = pidOf(cluster, pinned[0]!.worker);
    const threads = [randomUUID(), randomUUID()];
    const written = await checkpointsWritten();
    const outcomes = threads.map((thread, i) =>
      request(cluster.url, "POST", "/slow-agent/invoke", { input: { message: "sleep 3000" }, thread_id: thread }, {}, pinned[i]!.agent).then(
        (reply): Reply | Error => reply,
        (error: Error) => error,
      ),
    );
    await eventually(async () => (await checkpointsWritten()) >= written + 2, 10_000, "both runs past their lock and started");
    const before = await scrape(cluster);
    const logMark = cluster.logs.length;
    const killedAt = Date.now();
    process.kill(first, "SIGKILL");
    await cluster.waitForLog((l) => l.msg === "worker exited; replacing it", 5_000, logMark);
    const forked = await cluster.waitForLog((l) => l.msg === "worker forked", 5_000, logMark);
    assert.ok((forked.time as number) - killedAt < 2_000, `replacement forked ${(forked.time as number) - killedAt} ms after the kill`);

    // The killed worker held the first run: its client lost the connection, and its conversation is
    // free again at once.
    assert.ok((await outcomes[0]) instanceof Error, "the run on the killed worker lost its connection");
    const again = await invoke(cluster.url, "slow-agent", threads[0]!, "sleep 10");
    assert.equal(again.status, 200, `the killed worker's conversation is free: ${again.body}`);

    await eventually(async () => metric(await scrape(cluster), "agenthost_worker_restarts_total", { reason: "exited" }) === 1, 2_000, "restart counted");
    // The dead worker's counters stay in the sums: no counter goes down.
    const afterKill = await scrape(cluster);
    for (const [series, value] of before) {
      if (/_total|_count|_bucket|_sum/.test(series) && series.startsWith("agenthost_")) {
        assert.ok((afterKill.get(series) ?? 0) >= value, `${series} went from ${value} to ${afterKill.get(series)}`);
      }
    }
    await cluster.waitForLog((l) => l.msg === "listening" && l.pid === forked.worker_pid, 30_000);
    const other = await outcomes[1]!;
    assert.ok(!(other instanceof Error) && other.status === 200 && /slept 3000 ms/.test(other.body), "the run on the other worker went on to the end");
    closePinned([pinned]);
  });

  test("SIGTERM during a 3-second stream: the stream ends with [DONE], new requests are refused, exit 0", async () => {
    const written = await checkpointsWritten();
    const stream = request(cluster.url, "POST", "/slow-agent/stream", { input: { message: "sleep 3000" }, thread_id: randomUUID() });
    await eventually(async () => (await checkpointsWritten()) > written, 10_000, "the streamed run started");
    const workers = cluster.workerPids();
    cluster.process.kill("SIGTERM");
    await cluster.waitForLog((l) => l.msg === "shutting down" && l.role === "primary", 5_000);
    // Every worker has begun to drain before the new request is sent.
    await Promise.all(workers.map((pid) => cluster.waitForLog((l) => l.msg === "shutting down" && l.pid === pid, 5_000)));
    const refused = await invoke(cluster.url, "chatbot-agent", randomUUID(), "hello").then(
      (reply) => reply.status,
      (error: NodeJS.ErrnoException) => error.code,
    );
    // A connection the closing listener had already queued is reset rather than refused: not served either way.
    assert.ok(refused === "ECONNREFUSED" || refused === "ECONNRESET" || refused === 503, `new request refused, got ${refused}`);

    const reply = await stream;
    assert.equal(reply.status, 200);
    assert.match(reply.body, /slept 3000 ms/);
    assert.ok(reply.body.trimEnd().endsWith("data: [DONE]"), reply.body);
    assert.equal(await cluster.exited, 0);
  });
});
