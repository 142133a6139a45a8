import cluster from "node:cluster";
import { workerChannel } from "../../cluster/protocol.ts";
import type { Config } from "../../config/schema.ts";
import { connectionProblemForLog, type Logger } from "../../observability/logger.ts";
import type { EventLog } from "./event-log.ts";
import { MemoryEventLog, type MemoryEventLogOptions } from "./memory-event-log.ts";
import { PrimaryEventLog } from "./primary-event-log.ts";
import { RedisEventLog } from "./redis-event-log.ts";
import { StreamLogs } from "./stream-logs.ts";

/** How long a run's events may be kept at most (its deadline, then the resume window), and how many bytes. */
export function recordLimits(config: Config): MemoryEventLogOptions {
  const ttlMs = config.STREAM_RESUME_TTL * 1000;
  return {
    ttlMs,
    maxAgeMs: config.REQUEST_TIMEOUT * 1000 + ttlMs,
    maxRunBytes: config.STREAM_RESUME_MAX_RUN_BYTES,
    maxUserBytes: config.STREAM_RESUME_MAX_USER_BYTES,
    maxTotalBytes: config.STREAM_RESUME_MAX_BYTES,
  };
}

/** Where this process keeps resumable runs' events: Redis Streams when REDIS_URL is set, else the primary in a cluster worker, else its own memory. */
export function defaultStreamLogs(config: Config, logger: Logger): StreamLogs {
  const limits = recordLimits(config);
  const report = (error: unknown) => logger.warn(connectionProblemForLog(error), "resumable stream record failed");
  let log: EventLog;
  if (config.REDIS_URL) {
    log = new RedisEventLog({ ...limits, url: config.REDIS_URL, keyPrefix: `${config.REDIS_KEY_PREFIX}:`, onError: report });
  } else if (cluster.isWorker) {
    log = new PrimaryEventLog(workerChannel(), limits.maxRunBytes);
  } else {
    log = new MemoryEventLog(limits);
  }
  return new StreamLogs(log, report);
}
