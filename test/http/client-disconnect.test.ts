// An invoke whose client disconnects (issue 29, item 4). Without an Idempotency-Key the run is
// stopped and counted as `client_disconnected` (status 499 in the request's log line and metrics),
// never as a failure: no 500 run_failed, nothing logged at error level. With a key the run goes on
// to its end and its answer is kept, so the client's retry gets it instead of a replayed stop.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { call, startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";
import { waitFor } from "../helpers/raw-http.ts";
import { gate } from "../fixtures/gated-agent.ts";

const AGENTS = JSON.stringify(["./test/fixtures/gated-agent.ts:gatedAgent"]);

type Sample = { labels: Record<string, string | number>; value: number };

async function runsCounted(service: RunningService, outcome: string): Promise<number> {
  const json = await service.runtime.metrics.registry.getMetricsAsJSON();
  const runs = json.find((metric) => metric.name === "agenthost_runs_total");
  const found = (runs?.values as Sample[] | undefined)?.find((v) => v.labels.agent === "gated-agent" && v.labels.outcome === outcome);
  return found?.value ?? 0;
}

/** Start an invoke, wait until its run is at the gate, then drop the connection. */
async function invokeAndLeave(service: RunningService, body: unknown, headers: Record<string, string> = {}): Promise<void> {
  const client = new AbortController();
  const request = fetch(`${service.url}/gated-agent/invoke`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, ...headers },
    body: JSON.stringify(body),
    signal: client.signal,
  });
  await waitFor(() => gate.waiting === 1, "the run waiting at the gate");
  client.abort();
  await assert.rejects(request);
}

describe("an invoke whose client disconnects", () => {
  let service: RunningService;
  before(async () => {
    service = await startService({ AGENT_PATHS: AGENTS, THREAD_QUEUE_TIMEOUT: "0" });
  });
  after(() => service.close());

  test("without a key: the run stops, counted as client_disconnected, never as a failure", async () => {
    const failedBefore = await runsCounted(service, "run_failed");
    const leftBefore = await runsCounted(service, "client_disconnected");
    const logged = service.logs.length;

    await invokeAndLeave(service, { input: { message: "hi" }, thread_id: "left" });
    await waitFor(() => gate.waiting === 0 && service.runtime.admission.activeCount === 0, "the run stopped and its slot freed");
    await waitFor(async () => (await runsCounted(service, "client_disconnected")) === leftBefore + 1, "the run counted");
    assert.equal(await runsCounted(service, "run_failed"), failedBefore);

    const lines = service.logs.slice(logged);
    assert.deepEqual(lines.filter((line) => Number(line.level) >= 50), [], "nothing logged as an error");
    const request = lines.find((line) => line.msg === "request" && line.route === "/{agent_id}/invoke");
    assert.equal(request?.status, 499);
    assert.equal(request?.error_code, "client_disconnected");
    const run = lines.find((line) => line.msg === "run failed");
    assert.equal(run?.error_code, "client_disconnected");
    assert.equal(run?.level, 30);

    // The conversation is free for the next turn.
    const next = call(service, "POST", "/gated-agent/invoke", { input: { message: "again" }, thread_id: "left" });
    await waitFor(() => gate.waiting === 1, "the next run at the gate");
    gate.open();
    assert.equal((await next).status, 200);
  });

  test("with an Idempotency-Key: the run goes on, and the retry gets its answer", async () => {
    const key = { "idempotency-key": "f2b1c0de-left-and-retried" };
    const body = { input: { message: "hi" }, thread_id: "kept" };
    const okBefore = await runsCounted(service, "ok");
    await invokeAndLeave(service, body, key);

    // Still running: the retry is told so, and the run is still at the gate.
    const early = await fetch(`${service.url}/gated-agent/invoke`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, ...key },
      body: JSON.stringify(body),
    });
    assert.equal(early.status, 409);
    assert.equal(((await early.json()) as { error_code: string }).error_code, "idempotency_in_progress");
    assert.equal(gate.waiting, 1);

    gate.open();
    let retry: Response | undefined;
    await waitFor(async () => {
      retry = await fetch(`${service.url}/gated-agent/invoke`, {
        method: "POST",
        headers: { authorization: `Bearer ${TEST_TOKEN}`, ...key },
        body: JSON.stringify(body),
      });
      if (retry.status === 409) await retry.body?.cancel();
      return retry.status !== 409;
    }, "the kept answer");
    assert.equal(retry!.status, 200);
    assert.equal(retry!.headers.get("idempotent-replayed"), "true");
    assert.equal(((await retry!.json()) as { content: string }).content, "through the gate");
    assert.equal(await runsCounted(service, "ok"), okBefore + 1);
  });
});
