import cluster from "node:cluster";
import { workerChannel } from "../../cluster/protocol.ts";
import type { Config } from "../../config/schema.ts";
import { connectionProblemForLog, type Logger } from "../../observability/logger.ts";
import type { EventLog } from "./event-log.ts";
import { MemoryEventLog } from "./memory-event-log.ts";
import { PrimaryEventLog } from "./primary-event-log.ts";
import { RedisEventLog } from "./redis-event-log.ts";
import { StreamLogs } from "./stream-logs.ts";

/** How long a run's events may be kept at most: its deadline, then the resume window. */
export function recordLimits(config: Config): { ttlMs: number; maxAgeMs: number } {
  const ttlMs = config.STREAM_RESUME_TTL * 1000;
  return { ttlMs, maxAgeMs: config.REQUEST_TIMEOUT * 1000 + ttlMs };
}

/** This process's record, shared through Redis Streams when REDIS_URL is set, else through the primary in a cluster worker. */
export function defaultStreamLogs(config: Config, logger: Logger): StreamLogs {
  const { ttlMs, maxAgeMs } = recordLimits(config);
  const local = new MemoryEventLog(ttlMs, maxAgeMs);
  const report = (error: unknown) => logger.warn(connectionProblemForLog(error), "resumable stream record failed");
  let shared: EventLog | undefined;
  if (config.REDIS_URL) {
    shared = new RedisEventLog({ url: config.REDIS_URL, keyPrefix: `${config.REDIS_KEY_PREFIX}:`, ttlMs, maxAgeMs, onError: report });
  } else if (cluster.isWorker) {
    shared = new PrimaryEventLog(workerChannel());
  }
  return new StreamLogs(local, shared, report);
}
