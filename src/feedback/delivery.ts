import cluster from "node:cluster";
import type { Config } from "../config/schema.ts";
import { ServiceError } from "../errors/service-error.ts";
import type { Logger } from "../observability/logger.ts";
import { DELIVERY_TIMEOUT_MS, type FeedbackRecord, type ObservabilityBackend } from "../observability/backends/types.ts";
import type { FeedbackQueue, FeedbackWorker } from "./queue.ts";

export type DeliveryOutcome = "delivered" | "queued" | "skipped";

/** How feedback reaches the observability backend. */
export interface FeedbackDelivery {
  readonly mode: "none" | "inline" | "queue";
  /** Resolves once the feedback is safe (delivered or queued); throws ServiceError feedback_unavailable otherwise. */
  submit(record: FeedbackRecord, signal: AbortSignal, logger: Logger): Promise<DeliveryOutcome>;
  close(): Promise<void>;
}

/** The feedback answer's `detail` when it was recorded nowhere (delivery "skipped"). */
export const NOT_RECORDED_DETAIL = "No feedback destination is configured (OBSERVABILITY_BACKEND); this feedback was not recorded.";

/** Where a startup warning goes (a pino logger is one). */
interface Warnings {
  warn(fields: Record<string, unknown>, message: string): void;
}

/**
 * With OBSERVABILITY_BACKEND=empty, say once at startup that feedback is kept nowhere. The primary
 * says it for its workers; a worker says it only when it runs alone (its copy under a primary is a
 * debug line).
 */
export function warnIfFeedbackGoesNowhere(config: Pick<Config, "OBSERVABILITY_BACKEND">, warnings: Warnings): void {
  if (config.OBSERVABILITY_BACKEND !== "empty") return;
  warnings.warn(
    { setting: "OBSERVABILITY_BACKEND" },
    'feedback is not recorded: OBSERVABILITY_BACKEND is empty, so POST /feedback answers delivery "skipped" and keeps nothing; set it to langfuse or langsmith to keep feedback',
  );
}

export interface DeliveryOptions {
  /** Run the queue consumer in this process (default true when the queue is used). */
  readonly consume?: boolean;
}

/**
 * - OBSERVABILITY_BACKEND=empty: nothing to deliver to; feedback is acknowledged ("skipped", with a
 *   detail saying it was not recorded), and startup says so once (warnIfFeedbackGoesNowhere).
 * - REDIS_URL set: a BullMQ job per feedback; the consumer retries through backend outages.
 *   Each HTTP worker also runs a consumer unless told not to (workers/jobs.ts runs one alone).
 * - otherwise inline: the request waits for the backend; a failure is reported (feedback_unavailable)
 *   so the caller knows to retry (nothing is dropped silently).
 */
export function createFeedbackDelivery(
  config: Config,
  backend: ObservabilityBackend,
  logger: Logger,
  options: DeliveryOptions = {},
): FeedbackDelivery {
  if (backend.kind === "empty") {
    warnIfFeedbackGoesNowhere(config, cluster.isWorker ? { warn: (fields, message) => logger.debug(fields, message) } : logger);
    return { mode: "none", submit: async () => "skipped", close: async () => {} };
  }
  if (config.REDIS_URL) {
    const redisUrl = config.REDIS_URL;
    // BullMQ is loaded here, only when the queue is configured: a worker without it starts faster.
    const opened: Promise<{ queue: FeedbackQueue; worker: FeedbackWorker | undefined }> = import("./queue.ts").then((queueModule) => ({
      queue: queueModule.openFeedbackQueue(redisUrl, config),
      worker: options.consume === false ? undefined : queueModule.startFeedbackWorker(redisUrl, config, backend, logger),
    }));
    opened.catch((error: unknown) => logger.error({ err_type: (error as Error)?.name }, "feedback queue could not be opened"));
    return {
      mode: "queue",
      async submit(record, _signal, requestLogger) {
        try {
          const { queue } = await opened;
          await queue.add(record);
        } catch (error) {
          requestLogger.warn({ feedback_id: record.id, run_id: record.runId, err_type: (error as Error).name }, "feedback queue unavailable");
          throw new ServiceError("feedback_unavailable", { detail: "The feedback queue is unavailable; retry later." });
        }
        return "queued";
      },
      async close() {
        const { queue, worker } = await opened.catch(() => ({ queue: undefined, worker: undefined }));
        await worker?.close();
        await queue?.close();
      },
    };
  }
  return {
    mode: "inline",
    async submit(record, signal, requestLogger) {
      try {
        await backend.sendFeedback(record, AbortSignal.any([signal, AbortSignal.timeout(DELIVERY_TIMEOUT_MS)]));
      } catch (error) {
        requestLogger.warn(
          { feedback_id: record.id, run_id: record.runId, backend: backend.kind, err_type: (error as Error)?.name },
          "feedback delivery failed",
        );
        throw new ServiceError("feedback_unavailable");
      }
      return "delivered";
    },
    close: async () => {},
  };
}
