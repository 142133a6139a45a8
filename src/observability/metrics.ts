import {
  AggregatorRegistry,
  collectDefaultMetrics,
  Counter,
  Gauge,
  Histogram,
  Registry,
  type MetricObjectWithValues,
  type MetricValue,
} from "prom-client";

/**
 * Every Prometheus metric agenthost exports, declared once. Labels are bounded: route templates,
 * methods, statuses, agent names, outcomes and error codes from the catalogue — never user,
 * thread or run ids. Names use base units (`_seconds`, `_total`).
 *
 * Each worker owns a ServiceMetrics (one registry, summed across workers by the primary) and,
 * in a cluster worker, the default process metrics in a second registry that the primary labels
 * with the worker's slot instead of summing. The primary owns PrimaryMetrics.
 */

const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const LOCK_WAIT_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const CHECKPOINT_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
const MODEL_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300];

export type MetricsJson = MetricObjectWithValues<MetricValue<string>>[];

export class ServiceMetrics {
  readonly registry = new Registry();
  /** Default process metrics (CPU, memory, event loop, GC); empty unless collectProcessMetrics ran. */
  readonly processRegistry = new Registry();

  readonly httpRequests = new Counter({
    name: "agenthost_http_requests_total",
    help: "HTTP requests answered, by route template, method and status.",
    labelNames: ["route", "method", "status"] as const,
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: "agenthost_http_request_duration_seconds",
    help: "Time from request arrival until the response closed (streams: until the last byte).",
    labelNames: ["route", "method"] as const,
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });
  readonly activeRequests = new Gauge({
    name: "agenthost_http_active_requests",
    help: "HTTP requests in progress.",
    registers: [this.registry],
  });
  readonly admissionRejections = new Counter({
    name: "agenthost_admission_rejections_total",
    help: "Requests refused with 503 before any work: service_busy (worker full) or shutting_down (draining).",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });
  readonly lockWaits = new Counter({
    name: "agenthost_lock_waits_total",
    help: "Requests that found their conversation busy and queued for it (THREAD_QUEUE_TIMEOUT).",
    registers: [this.registry],
  });
  readonly lockConflicts = new Counter({
    name: "agenthost_lock_conflicts_total",
    help: "Requests answered 409 by the conversation lock: busy, queue_full or wait_expired.",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });
  readonly lockWaitDuration = new Histogram({
    name: "agenthost_lock_wait_duration_seconds",
    help: "Time queued requests waited for their conversation, by how the wait ended.",
    labelNames: ["outcome"] as const,
    buckets: LOCK_WAIT_BUCKETS,
    registers: [this.registry],
  });
  readonly lockAcquiring = new Gauge({
    name: "agenthost_lock_acquiring",
    help: "Requests taking a conversation lock right now: queued behind the conversation's holder, or asking the lock service.",
    registers: [this.registry],
  });
  readonly lockErrors = new Counter({
    name: "agenthost_lock_errors_total",
    help: "Lock acquisitions that failed because the lock service (primary or Redis) did not answer.",
    registers: [this.registry],
  });
  readonly deadlineExpiries = new Counter({
    name: "agenthost_deadline_expiries_total",
    help: "Requests whose REQUEST_TIMEOUT deadline fired before they finished (504 or a stream error event).",
    registers: [this.registry],
  });
  readonly streamCuts = new Counter({
    name: "agenthost_stream_cuts_total",
    help: "Streams the service cut because the client was not reading: slow_consumer (unsent output passed STREAM_MAX_UNSENT_BYTES) or deadline (REQUEST_TIMEOUT fired with output still unsent).",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });
  readonly runs = new Counter({
    name: "agenthost_runs_total",
    help: "Agent runs by agent and outcome (ok, or the error_code that ended them).",
    labelNames: ["agent", "outcome"] as const,
    registers: [this.registry],
  });
  readonly runDuration = new Histogram({
    name: "agenthost_run_duration_seconds",
    help: "Agent runs from their preparation (before the conversation lock) to their end, by agent and outcome (as agenthost_runs_total).",
    labelNames: ["agent", "outcome"] as const,
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });
  readonly modelCallDuration = new Histogram({
    name: "agenthost_model_call_duration_seconds",
    help: "Chat model calls from request to last token, by agent, provider, model and outcome (ok or error).",
    labelNames: ["agent", "provider", "model", "outcome"] as const,
    buckets: MODEL_BUCKETS,
    registers: [this.registry],
  });
  readonly modelTimeToFirstToken = new Histogram({
    name: "agenthost_model_time_to_first_token_seconds",
    help: "Streamed chat model calls from request to their first token, by agent, provider and model.",
    labelNames: ["agent", "provider", "model"] as const,
    buckets: MODEL_BUCKETS,
    registers: [this.registry],
  });
  readonly buildInfo = new Gauge({
    name: "agenthost_build_info",
    help: "Always 1; the labels say which build serves: version, Node.js version, checkpoint backend.",
    labelNames: ["version", "node_version", "backend"] as const,
    // One per worker, all alike: the cluster shows one series, not their sum.
    aggregator: "max",
    registers: [this.registry],
  });
  readonly tokens = new Counter({
    name: "agenthost_tokens_total",
    help: "Model tokens reported in usage_metadata of the messages returned, by agent and direction (in, out).",
    labelNames: ["agent", "direction"] as const,
    registers: [this.registry],
  });
  readonly checkpointDuration = new Histogram({
    name: "agenthost_checkpoint_operation_duration_seconds",
    help: "Checkpoint saver operations, by backend and operation.",
    labelNames: ["backend", "operation"] as const,
    buckets: CHECKPOINT_BUCKETS,
    registers: [this.registry],
  });
  readonly stalledRuns = new Gauge({
    name: "agenthost_stalled_runs",
    help: "Runs whose signal aborted longer than WORKER_STALL_TIMEOUT ago without the run settling.",
    registers: [this.registry],
  });

  readonly backgroundQueued = new Gauge({
    name: "agenthost_background_runs_queued",
    help: "Background runs waiting in the run queue (due or delayed), across every worker and host: each worker reads the shared queue when scraped.",
    // Every worker reads the same queue: the cluster shows one series, not their sum.
    aggregator: "max",
    registers: [this.registry],
    collect: async () => {
      const waiting = await this.backgroundQueueDepth?.().catch(() => undefined);
      if (waiting !== undefined) this.backgroundQueued.set(waiting);
    },
  });
  /** Where agenthost_background_runs_queued is read when scraped (set by the background runs). */
  backgroundQueueDepth: (() => Promise<number>) | undefined;
  readonly backgroundExecuting = new Gauge({
    name: "agenthost_background_runs_executing",
    help: "Background runs this worker executes now (at most BACKGROUND_RUNS_PER_WORKER).",
    registers: [this.registry],
  });
  readonly retentionDeleted = new Counter({
    name: "agenthost_retention_deleted_total",
    help: "Conversations the retention sweep deleted (CONVERSATION_TTL, or a Platform thread's ttl).",
    registers: [this.registry],
  });
  readonly retentionSkipped = new Counter({
    name: "agenthost_retention_skipped_total",
    help: "Expired conversations the retention sweep left for later, by reason (locked, queued, interrupted, running, updated).",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });
  readonly checkpointsCompacted = new Counter({
    name: "agenthost_checkpoints_compacted_total",
    help: "Root checkpoints compaction deleted (CHECKPOINT_KEEP_LATEST).",
    registers: [this.registry],
  });
  readonly authRefusals = new Counter({
    name: "agenthost_auth_refusals_total",
    help: "Requests refused for who sent them, by reason: a missing or refused token (expired, wrong_audience, …) or agent_forbidden (AGENT_ACCESS).",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });
  readonly fairShareRefusals = new Counter({
    name: "agenthost_fair_share_refusals_total",
    help: "Requests and runs refused 429 by a user's fair share, by limit: runs (FAIR_SHARE_MAX_RUNS), rate (FAIR_SHARE_REQUESTS_PER_MINUTE) or tokens (FAIR_SHARE_DAILY_TOKENS).",
    labelNames: ["limit"] as const,
    registers: [this.registry],
  });
  readonly backgroundRuns = new Counter({
    name: "agenthost_background_runs_total",
    help: "Background runs that reached a final status, by status (success, error, timeout, interrupted).",
    labelNames: ["status"] as const,
    registers: [this.registry],
  });
  readonly backgroundRetries = new Counter({
    name: "agenthost_background_run_retries_total",
    help: "Background runs taken again after the worker executing them died (each attempt after the first).",
    registers: [this.registry],
  });
  readonly backgroundQueueWait = new Histogram({
    name: "agenthost_background_run_queue_wait_seconds",
    help: "Background runs from when they were due (accepted, or after_seconds later) to their first start.",
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });

  private processMetricsOn = false;

  constructor() {
    // Bounded label sets start at zero, so rates and alerts see the series before the first event.
    for (const reason of ["service_busy", "shutting_down"]) this.admissionRejections.inc({ reason }, 0);
    for (const reason of ["busy", "queue_full", "wait_expired"]) this.lockConflicts.inc({ reason }, 0);
    for (const reason of ["slow_consumer", "deadline"]) this.streamCuts.inc({ reason }, 0);
    for (const status of ["success", "error", "timeout", "interrupted"]) this.backgroundRuns.inc({ status }, 0);
    for (const reason of ["missing", "unknown_token", "agent_forbidden"]) this.authRefusals.inc({ reason }, 0);
    for (const reason of ["locked", "queued", "interrupted", "running", "updated"]) this.retentionSkipped.inc({ reason }, 0);
    for (const limit of ["runs", "rate", "tokens"]) this.fairShareRefusals.inc({ limit }, 0);
  }

  /** Start the default process metrics; once per process (they hook the event loop and GC). */
  collectProcessMetrics(): void {
    if (this.processMetricsOn) return;
    this.processMetricsOn = true;
    collectDefaultMetrics({ register: this.processRegistry });
  }

  /** One run ended: counted by outcome, timed from `preparedAt` (performance.now()). */
  countRun(agent: string, outcome: string, preparedAt: number): void {
    this.runs.inc({ agent, outcome });
    this.runDuration.observe({ agent, outcome }, (performance.now() - preparedAt) / 1000);
  }

  /** Name the build serving (agenthost_build_info), once the checkpoint backend is known. */
  recordBuild(version: string, backend: string): void {
    this.buildInfo.set({ version, node_version: process.versions.node, backend }, 1);
  }

  /** Count the tokens of one returned message (`usage_metadata` null means unknown, not zero). */
  countTokens(agent: string, message: { usage_metadata?: { input_tokens?: number; output_tokens?: number } | null }): void {
    const usage = message.usage_metadata;
    if (!usage) return;
    if (usage.input_tokens) this.tokens.inc({ agent, direction: "in" }, usage.input_tokens);
    if (usage.output_tokens) this.tokens.inc({ agent, direction: "out" }, usage.output_tokens);
  }

  async snapshot(): Promise<{ app: MetricsJson; process: MetricsJson }> {
    return { app: await this.registry.getMetricsAsJSON(), process: await this.processRegistry.getMetricsAsJSON() };
  }
}

/** What only the primary knows. */
export class PrimaryMetrics {
  readonly registry = new Registry();
  readonly workerRestarts = new Counter({
    name: "agenthost_worker_restarts_total",
    help: "Workers replaced by the primary, by reason (exited, unresponsive, stalled, startup_timeout).",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });
  readonly workers = new Gauge({
    name: "agenthost_workers",
    help: "Worker processes alive under this primary.",
    registers: [this.registry],
  });
  readonly scrapeMissing = new Gauge({
    name: "agenthost_metrics_scrape_missing_workers",
    help: "Workers that did not answer the primary's last metrics collection in time (their figures are absent).",
    registers: [this.registry],
  });

  constructor() {
    for (const reason of ["exited", "unresponsive", "stalled", "startup_timeout"]) this.workerRestarts.inc({ reason }, 0);
  }
}

/**
 * The cluster's exposition: service metrics already summed over the workers (see
 * cluster/metrics-ledger.ts), process metrics per worker (labelled with the worker's slot,
 * 0..WEB_CONCURRENCY-1, so the label stays bounded across restarts), and the primary's own.
 */
export async function renderClusterMetrics(
  primary: PrimaryMetrics,
  app: MetricsJson,
  processes: ReadonlyArray<{ readonly slot: number; readonly process: MetricsJson }>,
): Promise<string> {
  const perWorker = processes.map((w) =>
    w.process.map((metric) => ({
      ...metric,
      values: metric.values.map((v) => ({ ...v, labels: { ...v.labels, worker: String(w.slot) } })),
    })),
  );
  const registry = AggregatorRegistry.aggregate([app, ...perWorker, await primary.registry.getMetricsAsJSON()]);
  return registry.metrics();
}

export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;
