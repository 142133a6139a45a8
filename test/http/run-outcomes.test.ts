// Every way a run can end, on every kind of request that starts one (issue 30, part 1): an invoke, a
// stream, a resumable stream. Each run is counted once (agenthost_runs_total, one outcome), timed
// once (agenthost_run_duration_seconds) and its span ends once, exported with that outcome. The runs
// wait at the gated agent's gate, holding their conversation, until the test ends them one way.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { MemoryConversationLock } from "../../src/coordination/locks/memory-lock.ts";
import type { ConversationLock, LockOutcome } from "../../src/coordination/locks/conversation-lock.ts";
import { RunAborted } from "../../src/errors/classify.ts";
import { startOtlpReceiver, type OtlpReceiver } from "../helpers/otlp-receiver.ts";
import { call, startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";
import { waitFor } from "../helpers/raw-http.ts";
import { gate } from "../fixtures/gated-agent.ts";

const AGENTS = JSON.stringify(["./test/fixtures/gated-agent.ts:gatedAgent"]);
const AGENT = "gated-agent";

/** The service's lock, whose leases the test can make lost (as a Redis lease that could not be extended). */
class LosableLock implements ConversationLock {
  private readonly inner = new MemoryConversationLock({ waitMs: 0, maxWaiters: 0 });
  private readonly held = new Set<AbortController>();

  async acquire(key: string, signal?: AbortSignal): Promise<LockOutcome> {
    const outcome = await this.inner.acquire(key, signal);
    if (!outcome.ok) return outcome;
    const lost = new AbortController();
    this.held.add(lost);
    const { lease } = outcome;
    return {
      ok: true,
      lease: {
        lost: lost.signal,
        waitedMs: lease.waitedMs,
        release: async () => {
          this.held.delete(lost);
          await lease.release();
        },
      },
    };
  }

  loseAll(): void {
    for (const lost of this.held) lost.abort(new RunAborted("lock_lost"));
  }

  ping = () => this.inner.ping();
  close = () => this.inner.close();
}

type Kind = "invoke" | "stream" | "resumable";
type Sample = { labels: Record<string, string | number>; value: number; metricName?: string };

async function sampled(service: RunningService, name: string, outcome?: string): Promise<number> {
  const json = await service.runtime.metrics.registry.getMetricsAsJSON();
  return json
    .flatMap((metric) => (metric.values as Sample[]).map((v) => ({ ...v, metricName: v.metricName ?? metric.name })))
    .filter((v) => v.metricName === name && v.labels.agent === AGENT && (outcome === undefined || v.labels.outcome === outcome))
    .reduce((sum, v) => sum + v.value, 0);
}

/** Start a run of `kind` on `thread`; resolves with its response (or the fetch's rejection, once the client left). */
function startRun(service: RunningService, kind: Kind, thread: string, client: AbortController): Promise<Response | Error> {
  const body = { input: { message: "hi" }, thread_id: thread, ...(kind === "resumable" ? { stream_resumable: true } : {}) };
  const route = kind === "invoke" ? "invoke" : "stream";
  return fetch(`${service.url}/${AGENT}/${route}`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}` },
    body: JSON.stringify(body),
    signal: client.signal,
  }).then(
    async (res) => {
      await res.arrayBuffer().catch(() => undefined);
      return res;
    },
    (error: Error) => error,
  );
}

interface Ending {
  /** The outcome the run must be counted with, by kind. */
  readonly outcome: (kind: Kind) => string;
  /** End the run waiting at the gate. */
  readonly end: (context: { service: RunningService; thread: string; client: AbortController; lock: LosableLock; kind: Kind }) => Promise<void>;
}

const ENDINGS: Record<string, Ending> = {
  ok: { outcome: () => "ok", end: async () => gate.open() },
  error: { outcome: () => "run_failed", end: async () => gate.fail() },
  cancel: {
    outcome: () => "run_cancelled",
    end: async ({ service, thread }) => {
      const res = await call(service, "POST", `/${AGENT}/cancel`, { thread_id: thread });
      assert.equal(((await res.json()) as { cancelled: boolean }).cancelled, true);
    },
  },
  "client gone": {
    // A resumable stream's run goes on without its client (to its end, here through the gate).
    outcome: (kind) => (kind === "resumable" ? "ok" : "client_disconnected"),
    end: async ({ client, kind }) => {
      client.abort();
      if (kind === "resumable") gate.open();
    },
  },
  "lock lost": { outcome: () => "lock_unavailable", end: async ({ lock }) => lock.loseAll() },
  "worker drain": {
    outcome: () => "shutting_down",
    end: async ({ service }) => {
      // What a draining worker does once its grace has run out (src/worker/run-worker.ts).
      assert.equal(service.runtime.activeRuns.stopAll(new RunAborted("shutdown")), 1);
    },
  },
};

async function runSpans(service: RunningService, receiver: OtlpReceiver, thread: string) {
  await service.runtime.tracing!.flush();
  return receiver.spans.filter((span) => span.name === `invoke_agent ${AGENT}` && span.attributes["gen_ai.conversation.id"] === thread);
}

describe("every way a run ends is counted, timed and traced once", () => {
  let receiver: OtlpReceiver;
  let service: RunningService;
  let deadlined: RunningService;
  const lock = new LosableLock();

  before(async () => {
    receiver = await startOtlpReceiver();
    const env = { AGENT_PATHS: AGENTS, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" };
    service = await startService(env, { locks: () => lock });
    // A deadline is behaviour under test: a service of its own with a short one.
    deadlined = await startService({ ...env, REQUEST_TIMEOUT: "1" });
  });
  after(async () => {
    await service.close();
    await deadlined.close();
    await receiver.close();
  });

  let n = 0;
  const cases: Array<[string, Ending, boolean]> = [
    ...Object.entries(ENDINGS).map(([name, ending]): [string, Ending, boolean] => [name, ending, false]),
    ["deadline", { outcome: () => "request_timeout", end: async () => {} }, true],
  ];
  for (const [name, ending, onDeadlined] of cases) {
    for (const kind of ["invoke", "stream", "resumable"] as const) {
      test(`${name}, ${kind}`, async () => {
        const target = onDeadlined ? deadlined : service;
        const thread = `outcome-${++n}`;
        const outcome = ending.outcome(kind);
        const runsBefore = await sampled(target, "agenthost_runs_total");
        const countedBefore = await sampled(target, "agenthost_runs_total", outcome);
        const timedBefore = await sampled(target, "agenthost_run_duration_seconds_count", outcome);

        const client = new AbortController();
        const answered = startRun(target, kind, thread, client);
        await waitFor(() => gate.waiting === 1, "the run waiting at the gate");
        await ending.end({ service: target, thread, client, lock, kind });
        await answered;
        await waitFor(async () => (await sampled(target, "agenthost_runs_total")) > runsBefore, "the run counted");
        await waitFor(async () => (await runSpans(target, receiver, thread)).length > 0, "the run's span exported");
        // Let anything that would count or end it a second time happen before looking.
        await waitFor(() => gate.waiting === 0 && target.runtime.admission.activeCount === 0, "the run settled and its slot freed");

        assert.equal(await sampled(target, "agenthost_runs_total"), runsBefore + 1, "counted once");
        assert.equal(await sampled(target, "agenthost_runs_total", outcome), countedBefore + 1, `counted as ${outcome}`);
        assert.equal(await sampled(target, "agenthost_run_duration_seconds_count", outcome), timedBefore + 1, "timed once");
        const spans = await runSpans(target, receiver, thread);
        assert.equal(spans.length, 1, "one run span");
        assert.equal(spans[0]!.attributes["agenthost.outcome"], outcome);
      });
    }
  }
});
