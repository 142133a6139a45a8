// A worker that drains hands its background runs back to the queue. One it has just claimed, and
// that has not reached its thread's lock yet, is stopped on its way there: the lock of a clustered
// worker (brokered by the primary) refuses a request whose signal has aborted. That refusal is the
// hand-back's doing, not the run's: the run goes back to `pending` and waits in the queue, with no
// `error` written, counted or sent to a webhook. (It used to be ended `error` there for good.) The
// worker's lock here is the real primary-brokered lock, over an in-process channel to a real broker.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { LockBroker } from "../../src/coordination/locks/lock-broker.ts";
import { PrimaryConversationLock } from "../../src/coordination/locks/primary-lock.ts";
import { gate } from "../fixtures/gated-agent.ts";
import { brokeredWorkers } from "../helpers/ipc-channel.ts";
import { waitFor } from "../helpers/raw-http.ts";
import { call, startService, type RunningService } from "../helpers/service.ts";

const AGENTS = JSON.stringify(["./test/fixtures/gated-agent.ts:gatedAgent"]);

/** A clustered worker's conversation lock: the primary's broker, reached over a channel. */
function brokeredLock(): PrimaryConversationLock {
  const policy = { waitMs: 0, maxWaiters: 8 };
  const broker = new LockBroker(policy, () => {}, 0);
  const connect = brokeredWorkers({ attach: (id, reply) => broker.attach(id, reply), detach: (id) => broker.detach(id), handle: (id, message) => broker.handle(id, message) });
  return new PrimaryConversationLock(connect().channel, policy);
}

let service: RunningService;

before(async () => {
  service = await startService({ AGENT_PATHS: AGENTS, BACKGROUND_POLL_INTERVAL: "0.2" }, { locks: () => brokeredLock() });
});
after(async () => {
  await service?.close();
});

test("a drain that stops a claimed run before its thread's lock hands it back: pending, queued, nothing ended", async () => {
  // The attempt's first read of its record waits until the drain has begun.
  const records = service.runtime.checkpoints.platform;
  const read = records.getRunWithThread.bind(records);
  let reading!: () => void;
  const inRead = new Promise<void>((resolve) => (reading = resolve));
  let drainBegun!: () => void;
  const drain = new Promise<void>((resolve) => (drainBegun = resolve));
  let first = true;
  records.getRunWithThread = async (...args) => {
    if (first) {
      first = false;
      reading();
      await drain;
    }
    return read(...args);
  };

  const thread = (await (await call(service, "POST", "/threads", {})).json()) as { thread_id: string };
  const accepted = await call(service, "POST", `/threads/${thread.thread_id}/runs`, { assistant_id: "gated-agent", input: { messages: [{ role: "user", content: "hi" }] } });
  assert.equal(accepted.status, 200);
  const run = (await accepted.json()) as { run_id: string };
  await inRead;
  const drained = service.runtime.background.handBack();
  drainBegun();
  await drained;

  const record = (await (await call(service, "GET", `/threads/${thread.thread_id}/runs/${run.run_id}`)).json()) as { status: string };
  assert.equal(record.status, "pending");
  const after = (await (await call(service, "GET", `/threads/${thread.thread_id}`)).json()) as { status: string };
  assert.notEqual(after.status, "error");
  assert.deepEqual(await service.runtime.checkpoints.runQueue.onThread(service.runtime.config.AUTH_SERVICE_USER_ID, thread.thread_id).then((rows) => rows.map((row) => row.runId)), [run.run_id]);
  const metrics = await service.runtime.metrics.registry.metrics();
  assert.doesNotMatch(metrics, /^agenthost_background_runs_total\{status="error"\} [1-9]/m);
  await waitFor(() => service.logs.some((line) => line.msg === "background run handed back" && line.run_id === run.run_id), "the hand-back logged");
  assert.equal(service.logs.some((line) => line.msg === "background run refused" && line.run_id === run.run_id), false);
});

/** A waited run of the gated agent on the thread, let through its gate; its run id. */
async function waitedRun(threadId: string, body: Record<string, unknown> = {}): Promise<string> {
  const before = gate.waiting;
  const answer = call(service, "POST", `/threads/${threadId}/runs/wait`, { assistant_id: "gated-agent", input: { messages: [{ role: "user", content: "hi" }] }, ...body });
  await waitFor(() => gate.waiting > before, "the run waits at its gate");
  gate.open();
  const res = await answer;
  assert.equal(res.status, 200);
  const runs = (await (await call(service, "GET", `/threads/${threadId}/runs`)).json()) as Array<{ run_id: string }>;
  return runs[0]!.run_id;
}

test("a run queued again after its end was written keeps its end when a later run makes room on its thread", async () => {
  const thread = (await (await call(service, "POST", "/threads", {})).json()) as { thread_id: string };
  const ended = await waitedRun(thread.thread_id);
  // Its queue entry back, as a drain leaves one whose end was written (it is dropped at its next
  // claim, due here only in an hour).
  const { runQueue } = service.runtime.checkpoints;
  const user = service.runtime.config.AUTH_SERVICE_USER_ID;
  await runQueue.add({ runId: ended, userId: user, threadId: thread.thread_id, availableAt: Date.now() + 3_600_000, caller: {} });
  await waitedRun(thread.thread_id, { multitask_strategy: "interrupt" });
  const record = (await (await call(service, "GET", `/threads/${thread.thread_id}/runs/${ended}`)).json()) as { status: string };
  assert.equal(record.status, "success", "its end stays");
  assert.deepEqual(await runQueue.onThread(user, thread.thread_id), [], "it left the queue");
});
