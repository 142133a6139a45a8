import cluster from "node:cluster";
import { AdmissionLimiter } from "./admission/limiter.ts";
import type { ConversationLock } from "./admission/locks/conversation-lock.ts";
import { decorateLock } from "./admission/locks/lock-decorator.ts";
import { countLockOutcomes } from "./admission/locks/lock-metrics.ts";
import { MemoryConversationLock } from "./admission/locks/memory-lock.ts";
import { PrimaryConversationLock } from "./admission/locks/primary-lock.ts";
import { RedisConversationLock, type LeaseEvent } from "./admission/locks/redis-lock.ts";
import { workerChannel } from "./coordination/protocol.ts";
import { closeScope, coordinationScope, type CoordinationScope } from "./coordination/scope.ts";
import { ServiceMetrics } from "./observability/metrics.ts";
import { RunTracker } from "./worker/run-tracker.ts";
import { ActiveRuns } from "./runs/cancel/active-runs.ts";
import { defaultRunCanceller } from "./runs/cancel/default-canceller.ts";
import type { RunCanceller } from "./runs/cancel/run-canceller.ts";
import { defaultStreamLogs } from "./runs/stream-log/default-stream-logs.ts";
import type { StreamLogs } from "./runs/stream-log/stream-logs.ts";
import { buildAgentRegistry, type AgentRegistry } from "./agents/registry.ts";
import { createAuthenticator, type Authenticator } from "./auth/principal.ts";
import { openCheckpointBackend, type CheckpointBackend } from "./checkpoints/backend.ts";
import { TimedSaver } from "./checkpoints/timed-saver.ts";
import { createFeedbackDelivery, type FeedbackDelivery } from "./feedback/delivery.ts";
import { createObservabilityBackend, type ObservabilityBackend } from "./observability/backends/index.ts";
import type { Config } from "./config/schema.ts";
import { decideLibraryShortcuts, type ActiveShortcuts, type InstalledVersion } from "./config/library-shortcuts.ts";
import { langChainEnvironmentProblems, langChainTracingFromEnvironment } from "./config/langchain-environment.ts";
import { ConfigError } from "./config/load.ts";
import { loadMcpToolset, McpToolsError, type McpToolset } from "./agents/mcp-tools.ts";
import { createModelCatalog, type ModelCatalog } from "./models/catalog.ts";
import { createProviderHttpPool } from "./models/http-pool.ts";
import { createLogger, type Logger } from "./observability/logger.ts";
import { serviceVersion } from "./observability/build.ts";
import { ModelCallObserver } from "./observability/model-calls.ts";
import { createTracing } from "./observability/load-tracing.ts";
import { installUntracedRunContext } from "./observability/untraced-run-context.ts";
import type { Tracing } from "./observability/tracing.ts";

/**
 * Control requests (POST /cancel) served at once per worker beyond REQUEST_MAX_CONCURRENT. A cancel
 * is one lookup and one message (no run, no lock wait), so a few slots serve any number of stop
 * buttons; past them a cancel is refused 503 service_busy like any request.
 */
export const CONTROL_SLOTS = 4;

/** What the HTTP layer serves with: the middleware and routes see this and nothing more. */
export interface Runtime {
  readonly config: Config;
  readonly logger: Logger;
  readonly authenticate: Authenticator;
  readonly admission: AdmissionLimiter;
  /**
   * The worker's few slots for control requests (POST /cancel), apart from REQUEST_MAX_CONCURRENT's:
   * a stop button must get through when the runs it would stop fill the worker.
   */
  readonly controlAdmission: AdmissionLimiter;
  readonly locks: ConversationLock;
  /** Readiness asks whether the database answers and has a free connection. */
  readonly checkpoints: Pick<CheckpointBackend, "ping" | "saturated" | "threads" | "idempotency">;
  readonly registry: AgentRegistry;
  /** Every chat model of the worker; resolves request-time model selection. */
  readonly models: ModelCatalog;
  /** How feedback reaches the backend: inline, through the BullMQ queue, or nowhere. */
  readonly feedback: FeedbackDelivery;
  readonly metrics: ServiceMetrics;
  /** OpenTelemetry traces; undefined when no OTLP endpoint is configured. */
  readonly tracing: Tracing | undefined;
  /** Stalled-run tracking behind `/health/live`. */
  readonly runTracker: RunTracker;
  /** The runs of this process that hold a conversation (what a cancel stops here). */
  readonly activeRuns: ActiveRuns;
  /** Stops the run holding a conversation on whichever worker or host it runs. */
  readonly canceller: RunCanceller;
  /** The events of resumable streams (stream_resumable), for resuming after a dropped connection. */
  readonly streamLogs: StreamLogs;
  /** Set when the worker stops accepting requests (shutdown). */
  readonly lifecycle: { draining: boolean };
}

/** Everything a worker holds, built once from the configuration (the composition root), and how to close it. */
export interface WorkerRuntime extends Runtime {
  readonly checkpoints: CheckpointBackend;
  /** Remote tools per agent (MCP_AGENT_SERVERS). */
  readonly mcp: McpToolset;
  /** Tracing and feedback target (OBSERVABILITY_BACKEND). */
  readonly observability: ObservabilityBackend;
  /** The library shortcuts this worker takes (LIBRARY_SHORTCUTS and the installed versions). */
  readonly shortcuts: ActiveShortcuts;
  close(): Promise<void>;
}

export interface RuntimeOverrides {
  readonly logger?: Logger;
  /** The lock implementation; defaults to `defaultConversationLock`. */
  readonly locks?: (config: Config, scope: CoordinationScope) => ConversationLock;
  /** Run the feedback queue consumer in this process (default true; workers/jobs.ts runs it alone). */
  readonly consumeFeedbackQueue?: boolean;
  readonly metrics?: ServiceMetrics;
  /** How the library shortcuts' packages' versions are read (tests fake a mismatch). */
  readonly installedVersion?: InstalledVersion;
}

function reportLease(event: LeaseEvent): void {
  try {
    workerChannel().send({ ah: "lease", ...event });
  } catch {
    // The primary is gone; this worker exits with it.
  }
}

/**
 * This process's own lock table for the memory backend: its conversations live in this one process
 * (it runs one worker), so no other process can hold one. Otherwise as far as the process's
 * coordination reaches: Redis, the primary's broker, or this process.
 */
export function defaultConversationLock(config: Config, scope: CoordinationScope): ConversationLock {
  const policy = { waitMs: config.THREAD_QUEUE_TIMEOUT * 1000, maxWaiters: config.THREAD_QUEUE_MAX_WAITERS };
  if (config.MEMORY_BACKEND === "memory") return new MemoryConversationLock(policy);
  switch (scope.kind) {
    case "redis":
      return new RedisConversationLock({
        link: scope.link,
        keyPrefix: scope.keyPrefix,
        leaseMs: Math.round(config.REDIS_LOCK_LEASE * 1000),
        policy,
        // Under the primary, report leases so it can release this worker's if it dies.
        onLease: cluster.isWorker ? reportLease : undefined,
      });
    case "primary":
      return new PrimaryConversationLock(scope.channel, policy);
    case "process":
      return new MemoryConversationLock(policy);
  }
}

export async function buildRuntime(config: Config, overrides: RuntimeOverrides = {}): Promise<WorkerRuntime> {
  const environment = langChainEnvironmentProblems();
  if (environment.length) throw new ConfigError(environment);
  const logger = overrides.logger ?? createLogger(config);
  // Under the primary, which has already warned about a version mismatch, the workers' copies are debug lines.
  const shortcutWarnings = cluster.isWorker ? { warn: (fields: object, message: string) => logger.debug(fields, message) } : logger;
  const shortcuts = decideLibraryShortcuts(config.LIBRARY_SHORTCUTS, shortcutWarnings, overrides.installedVersion);
  if (shortcuts.untracedRunContext) installUntracedRunContext({ tracingFromEnvironment: langChainTracingFromEnvironment() });
  const metrics = overrides.metrics ?? new ServiceMetrics();
  const runTracker = new RunTracker(config.WORKER_STALL_TIMEOUT * 1000);
  const tracing = await createTracing(config);
  const providerPool = createProviderHttpPool(config, tracing);
  // Undone in reverse order if startup fails part-way.
  const cleanup: Array<() => Promise<void>> = [async () => tracing?.close(), () => providerPool.close()];
  const unwind = async () => {
    for (const step of cleanup.reverse()) await step().catch(() => {});
  };
  try {
    // Model calls are timed (and traced) by a handler on each model the catalog builds.
    const models = await createModelCatalog(config, providerPool, [new ModelCallObserver(metrics, tracing?.modelCalls)]);
    const mcp = await loadMcpToolset(config);
    cleanup.push(() => mcp.close());
    const checkpoints = await openCheckpointBackend(config, { logger, shortcuts });
    cleanup.push(() => checkpoints.close());
    metrics.recordBuild(serviceVersion(), checkpoints.kind);
    const observability = await createObservabilityBackend(config);
    cleanup.push(() => observability.close());
    const registry = await buildAgentRegistry({
      config,
      model: models.default,
      models,
      checkpointer: new TimedSaver(checkpoints.saver, checkpoints.kind, metrics.checkpointDuration, tracing),
      toolsFor: mcp.toolsFor,
      callbacks: observability.callbacks,
      shortcuts,
    });
    const strangers = mcp.unknownAgents(registry.agents.keys());
    if (strangers.length) {
      throw new McpToolsError(strangers.map((agent) => `MCP_AGENT_SERVERS names "${agent}", which is not a registered agent`));
    }
    const feedback = createFeedbackDelivery(config, observability, logger, { consume: overrides.consumeFeedbackQueue ?? true });
    const scope = coordinationScope(config, logger);
    cleanup.push(async () => closeScope(scope));
    const activeRuns = new ActiveRuns();
    const canceller = defaultRunCanceller(scope, activeRuns);
    cleanup.push(() => canceller.close());
    const streamLogs = defaultStreamLogs(config, logger, scope);
    cleanup.push(() => streamLogs.close());
    const locks = decorateLock(
      overrides.locks?.(config, scope) ?? defaultConversationLock(config, scope),
      countLockOutcomes(metrics),
      ...(tracing ? [tracing.lockWaits] : []),
    );
    return {
      config,
      logger,
      authenticate: createAuthenticator(config),
      admission: new AdmissionLimiter(
        config.REQUEST_MAX_CONCURRENT,
        config.REQUEST_QUEUE_MAX_WAITERS,
        config.REQUEST_QUEUE_TIMEOUT * 1000,
      ),
      controlAdmission: new AdmissionLimiter(CONTROL_SLOTS, 0, 0),
      locks,
      checkpoints,
      registry,
      models,
      mcp,
      observability,
      shortcuts,
      feedback,
      metrics,
      tracing,
      runTracker,
      activeRuns,
      canceller,
      streamLogs,
      lifecycle: { draining: false },
      close: async () => {
        await feedback.close();
        await observability.close();
        await locks.close();
        await canceller.close();
        await streamLogs.close();
        closeScope(scope);
        await checkpoints.close();
        await mcp.close();
        await providerPool.close();
        await tracing?.close();
      },
    };
  } catch (error) {
    await unwind();
    throw error;
  }
}
