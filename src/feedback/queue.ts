import { Queue, Worker, type Job } from "bullmq";
import { Redis } from "ioredis";
import type { Config } from "../config/schema.ts";
import type { Logger } from "../observability/logger.ts";
import type { FeedbackRecord, ObservabilityBackend } from "../observability/backends/types.ts";

/** The BullMQ queue of feedback waiting for the observability backend. */
export const FEEDBACK_QUEUE = "feedback";

/** One job per feedback id: BullMQ ignores an add whose job id already exists. */
export const feedbackJobId = (record: FeedbackRecord) => `feedback-${record.id}`;

/** Kept after completion so a repeated submission within a day stays one job. */
const KEEP_COMPLETED = { age: 24 * 3600, count: 10_000 };
const KEEP_FAILED = { age: 7 * 24 * 3600 };

export interface FeedbackQueue {
  add(record: FeedbackRecord): Promise<void>;
  close(): Promise<void>;
}

/**
 * The producer side. Its connection fails fast (no offline queue): when Redis is down the
 * request answers 503 at once instead of hanging until its deadline.
 */
export function openFeedbackQueue(redisUrl: string, config: Config): FeedbackQueue {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false });
  connection.on("error", () => {});
  const queue = new Queue<FeedbackRecord>(FEEDBACK_QUEUE, { connection, prefix: `${config.REDIS_KEY_PREFIX}:bull` });
  queue.on("error", () => {});
  return {
    async add(record) {
      await queue.add("deliver", record, {
        jobId: feedbackJobId(record),
        attempts: config.FEEDBACK_MAX_ATTEMPTS,
        backoff: { type: "exponential", delay: Math.round(config.FEEDBACK_RETRY_DELAY * 1000) },
        removeOnComplete: KEEP_COMPLETED,
        removeOnFail: KEEP_FAILED,
      });
    },
    async close() {
      await queue.close().catch(() => {});
      connection.disconnect();
    },
  };
}

export interface FeedbackWorker {
  close(): Promise<void>;
}

/**
 * The consumer: delivers queued feedback to the backend, retried with exponential backoff by
 * BullMQ until FEEDBACK_MAX_ATTEMPTS. Delivery is idempotent (the record id is the backend's
 * record id), so a job re-run after a stall does no harm.
 */
export function startFeedbackWorker(redisUrl: string, config: Config, backend: ObservabilityBackend, logger: Logger): FeedbackWorker {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  connection.on("error", () => {});
  const worker = new Worker<FeedbackRecord>(
    FEEDBACK_QUEUE,
    async (job: Job<FeedbackRecord>) => {
      await backend.sendFeedback(job.data);
    },
    { connection, prefix: `${config.REDIS_KEY_PREFIX}:bull`, concurrency: 4 },
  );
  worker.on("error", (error) => logger.warn({ err_type: error.name }, "feedback queue connection problem"));
  worker.on("completed", (job) => {
    logger.info({ feedback_id: job.data.id, run_id: job.data.runId, attempts: job.attemptsMade }, "feedback delivered");
  });
  worker.on("failed", (job, error) => {
    if (!job) return;
    const final = job.attemptsMade >= (job.opts.attempts ?? 1);
    logger[final ? "error" : "warn"](
      { feedback_id: job.data.id, run_id: job.data.runId, attempts: job.attemptsMade, err_type: error.name, err: error.message },
      final ? "feedback delivery failed for good" : "feedback delivery failed; will retry",
    );
  });
  return {
    async close() {
      await worker.close().catch(() => {});
      connection.disconnect();
    },
  };
}
