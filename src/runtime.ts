import cluster from "node:cluster";
import { AdmissionLimiter } from "./admission/limiter.ts";
import { FairShare, type FairShareReporting } from "./admission/fair-share.ts";
import { FairShareLimits } from "./admission/fair-share-limits.ts";
import type { ConversationLock } from "./coordination/locks/conversation-lock.ts";
import { countLockOutcomes } from "./coordination/locks/lock-metrics.ts";
import { traceLockWaits } from "./coordination/locks/lock-tracing.ts";
import { openCoordination } from "./coordination/coordination.ts";
import type { CoordinationScope } from "./coordination/scope.ts";
import type { Runtime } from "./http/http-runtime.ts";
import { ServiceMetrics } from "./observability/metrics.ts";
import { RunTracker } from "./runs/run-tracker.ts";
import { buildAgentRegistry } from "./agents/registry.ts";
import { createAuthenticator, type AuthReporting } from "./auth/principal.ts";
import { openCheckpointBackend, type CheckpointBackend } from "./checkpoints/backend.ts";
import { ConversationStore } from "./checkpoints/conversation-store.ts";
import { TimedSaver } from "./checkpoints/timed-saver.ts";
import { createFeedbackDelivery } from "./feedback/delivery.ts";
import { createObservabilityBackend, type ObservabilityBackend } from "./observability/backends/index.ts";
import type { Config } from "./config/schema.ts";
import { decideLibraryShortcuts, type ActiveShortcuts, type InstalledVersion } from "./config/library-shortcuts.ts";
import { langChainEnvironmentProblems, langChainTracingFromEnvironment } from "./config/langchain-environment.ts";
import { ConfigError } from "./config/load.ts";
import { loadMcpToolset, McpToolsError, type McpToolset } from "./agents/mcp-tools.ts";
import { createModelCatalog } from "./models/catalog.ts";
import { createProviderHttpPool } from "./models/http-pool.ts";
import { createLogger, type Logger } from "./observability/logger.ts";
import { serviceVersion } from "./observability/build.ts";
import { ModelCallObserver } from "./observability/model-calls.ts";
import { createTracing } from "./observability/load-tracing.ts";
import { installUntracedRunContext } from "./observability/untraced-run-context.ts";
import { BackgroundSlot } from "./runs/background-work.ts";
import { openRunQueue } from "./background/open-run-queue.ts";
import { RetentionSweeper } from "./background/retention-sweep.ts";

/** Expired conversations a retention sweep reads per pass (each of its two kinds). */
const RETENTION_BATCH = 500;

/**
 * Control requests (POST /cancel) served at once per worker beyond REQUEST_MAX_CONCURRENT. A cancel
 * is one lookup and one message (no run, no lock wait), so a few slots serve any number of stop
 * buttons; past them a cancel is refused 503 service_busy like any request.
 */
export const CONTROL_SLOTS = 4;

/** Everything a worker holds, built once from the configuration (the composition root), and how to close it. */
export type { Runtime };

export interface WorkerRuntime extends Runtime {
  readonly checkpoints: CheckpointBackend;
  /** Online retention (CONVERSATION_TTL, Platform thread ttl): sweeps on its own; `sweep()` runs one now. */
  readonly retention: RetentionSweeper;
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
  /** The lock implementation; defaults to the coordination scope's (`conversationLock`). */
  readonly locks?: (config: Config, scope: CoordinationScope) => ConversationLock;
  /** Run the feedback queue consumer in this process (default true; workers/jobs.ts runs it alone). */
  readonly consumeFeedbackQueue?: boolean;
  readonly metrics?: ServiceMetrics;
  /** How the library shortcuts' packages' versions are read (tests fake a mismatch). */
  readonly installedVersion?: InstalledVersion;
  /** Candidates a retention sweep reads per pass (default 500; tests make it smaller than what a sweep leaves). */
  readonly retentionBatch?: number;
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
    // One saver for every agent's graph and for the service's own reads and writes of conversations.
    const saver = new TimedSaver(checkpoints.saver, checkpoints.kind, metrics.checkpointDuration, tracing);
    const conversations = new ConversationStore(saver, checkpoints.latestCheckpoints);
    const registry = await buildAgentRegistry({
      config,
      model: models.default,
      models,
      checkpointer: saver,
      toolsFor: mcp.toolsFor,
      callbacks: observability.callbacks,
      shortcuts,
    });
    const strangers = mcp.unknownAgents(registry.agents.keys());
    if (strangers.length) {
      throw new McpToolsError(strangers.map((agent) => `MCP_AGENT_SERVERS names "${agent}", which is not a registered agent`));
    }
    const feedback = createFeedbackDelivery(config, observability, logger, { consume: overrides.consumeFeedbackQueue ?? true });
    const fairShareLimits = new FairShareLimits(config);
    const coordination = openCoordination(config, logger, {
      lock: overrides.locks,
      lockDecorators: [countLockOutcomes(metrics), ...(tracing ? [traceLockWaits(tracing)] : [])],
      fairShare: fairShareLimits.on,
    });
    cleanup.push(() => coordination.close());
    const { locks, activeRuns, canceller, streamLogs } = coordination;
    const background = new BackgroundSlot();
    const runQueue = await openRunQueue(config, checkpoints.runQueue, logger);
    const retention = new RetentionSweeper({
      settings: {
        ttlMs: config.CONVERSATION_TTL === undefined ? null : config.CONVERSATION_TTL * 1000,
        intervalMs: config.RETENTION_SWEEP_INTERVAL * 1000,
        maxPerSecond: config.RETENTION_MAX_DELETIONS_PER_SECOND,
        batch: overrides.retentionBatch ?? RETENTION_BATCH,
        keepLatest: config.CHECKPOINT_KEEP_LATEST ?? null,
        runRecordTtlMs: config.RUN_RECORD_TTL * 1000,
      },
      records: checkpoints.platform,
      index: checkpoints.threads,
      store: conversations,
      idempotency: checkpoints.idempotency,
      leases: checkpoints.leases,
      locks,
      queue: runQueue,
      logger,
      metrics,
    });
    retention.start();
    return {
      config,
      logger,
      authenticate: createAuthenticator(config, authReporting(metrics, logger)),
      admission: new AdmissionLimiter(
        config.REQUEST_MAX_CONCURRENT,
        config.REQUEST_QUEUE_MAX_WAITERS,
        config.REQUEST_QUEUE_TIMEOUT * 1000,
      ),
      controlAdmission: new AdmissionLimiter(CONTROL_SLOTS, 0, 0),
      fairShare: new FairShare(fairShareLimits, coordination.fairShare, fairShareReporting(metrics, logger)),
      locks,
      checkpoints,
      conversations,
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
      background,
      runQueue,
      retention,
      lifecycle: { draining: false },
      close: async () => {
        await retention.close();
        // Background runs still executing go back to their queue before the storage they need closes.
        await background.handBack();
        await runQueue.close();
        await feedback.close();
        await observability.close();
        await coordination.close();
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

/** Refused tokens counted by reason and logged (the reason, never the token); unreadable keys logged at most every 10 s. */
function authReporting(metrics: ServiceMetrics, logger: Logger): AuthReporting {
  let lastKeysLog = -Infinity;
  return {
    refused(reason) {
      metrics.authRefusals.inc({ reason });
      if (reason !== "missing") logger.info({ reason }, "bearer token refused");
    },
    keysUnreadable(why) {
      const now = performance.now();
      if (now - lastKeysLog < 10_000) return;
      lastKeysLog = now;
      logger.warn({ why }, "the identity provider's keys could not be read; tokens signed by keys already read are still verified");
    },
  };
}

/** Fair-share refusals counted by limit and logged with the user (never a token); unreachable counters logged at most every 10 s. */
function fairShareReporting(metrics: ServiceMetrics, logger: Logger): FairShareReporting {
  let lastOutageLog = -Infinity;
  return {
    refused(limit, user, retryAfterSeconds) {
      metrics.fairShareRefusals.inc({ limit });
      logger.info({ limit, user_id: user, retry_after: retryAfterSeconds }, "fair share refused");
    },
    unavailable(error) {
      const now = performance.now();
      if (now - lastOutageLog < 10_000) return;
      lastOutageLog = now;
      logger.warn({ err_type: (error as Error | undefined)?.name }, "the fair-share counters could not be reached; requests go ahead unlimited meanwhile");
    },
  };
}
