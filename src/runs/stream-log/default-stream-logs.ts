import type { Config } from "../../config/schema.ts";
import type { CoordinationScope } from "../../coordination/scope.ts";
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

/** Where this process keeps resumable runs' events, as far as its coordination reaches: Redis Streams, the primary, or its own memory. */
export function defaultStreamLogs(config: Config, logger: Logger, scope: CoordinationScope): StreamLogs {
  const limits = recordLimits(config);
  const report = (error: unknown) => logger.warn(connectionProblemForLog(error), "resumable stream record failed");
  return new StreamLogs(eventLog(scope, limits, report), report);
}

function eventLog(scope: CoordinationScope, limits: MemoryEventLogOptions, report: (error: Error) => void): EventLog {
  switch (scope.kind) {
    case "redis":
      return new RedisEventLog({ ...limits, link: scope.link, keyPrefix: scope.keyPrefix, onError: report });
    case "primary":
      return new PrimaryEventLog(scope.channel, limits.maxRunBytes);
    case "process":
      return new MemoryEventLog(limits);
  }
}
