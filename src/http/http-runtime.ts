import type { AdmissionLimiter } from "../admission/limiter.ts";
import type { FairShare } from "../admission/fair-share.ts";
import type { AgentRegistry } from "../agents/registry.ts";
import type { Authenticator } from "../auth/principal.ts";
import type { CheckpointBackend } from "../checkpoints/backend.ts";
import type { ConversationStore } from "../checkpoints/conversation-store.ts";
import type { Config } from "../config/schema.ts";
import type { ActiveRuns } from "../coordination/cancel/active-runs.ts";
import type { RunCanceller } from "../coordination/cancel/run-canceller.ts";
import type { ConversationLock } from "../coordination/locks/conversation-lock.ts";
import type { StreamLogs } from "../coordination/run-events/stream-logs.ts";
import type { FeedbackDelivery } from "../feedback/delivery.ts";
import type { ModelCatalog } from "../models/catalog.ts";
import type { Logger } from "../observability/logger.ts";
import type { ServiceMetrics } from "../observability/metrics.ts";
import type { Tracing } from "../observability/tracing.ts";
import type { RunQueueEngine } from "../background/run-queue-engine.ts";
import type { BackgroundSlot } from "../runs/background-work.ts";
import type { RunTracker } from "../runs/run-tracker.ts";

/**
 * What the HTTP layer serves with: the middleware and routes see this and nothing more. The
 * composition root (src/runtime.ts) builds it.
 */
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
  /** Each user's fair share across the workers and hosts (FAIR_SHARE_*): runs at once, requests per minute, daily tokens. */
  readonly fairShare: FairShare;
  readonly locks: ConversationLock;
  /** Readiness asks whether the database answers and has a free connection. */
  readonly checkpoints: Pick<CheckpointBackend, "ping" | "saturated" | "threads" | "idempotency" | "platform">;
  /** The conversations as the service reads and writes them outside a graph (a run's head, history). */
  readonly conversations: ConversationStore;
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
  /** Where background runs wait, and how this worker takes them (the checkpoint database, or BullMQ over REDIS_URL). */
  readonly runQueue: RunQueueEngine;
  /** Where the app puts the worker's background-run executor (the worker drains it on shutdown). */
  readonly background: BackgroundSlot;
  /** Set when the worker stops accepting requests (shutdown). */
  readonly lifecycle: { draining: boolean };
}

