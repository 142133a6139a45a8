import cluster from "node:cluster";
import type { Config } from "../config/schema.ts";
import { connectionProblemForLog, type Logger } from "../observability/logger.ts";
import { ActiveRuns } from "./cancel/active-runs.ts";
import { PrimaryRunCanceller } from "./cancel/primary-canceller.ts";
import { RedisRunCanceller } from "./cancel/redis-canceller.ts";
import { LocalRunCanceller, type RunCanceller } from "./cancel/run-canceller.ts";
import type { ConversationLock } from "./locks/conversation-lock.ts";
import { decorateLock, type LockDecorator } from "./locks/lock-decorator.ts";
import { MemoryConversationLock } from "./locks/memory-lock.ts";
import { PrimaryConversationLock } from "./locks/primary-lock.ts";
import { RedisConversationLock, type LeaseEvent } from "./locks/redis-lock.ts";
import { workerChannel } from "./protocol.ts";
import type { EventLog } from "./run-events/event-log.ts";
import { MemoryEventLog, type MemoryEventLogOptions } from "./run-events/memory-event-log.ts";
import { MirroredEventLog } from "./run-events/mirrored-event-log.ts";
import { PrimaryEventLog } from "./run-events/primary-event-log.ts";
import { RedisEventLog } from "./run-events/redis-event-log.ts";
import { StreamLogs } from "./run-events/stream-logs.ts";
import { closeScope, coordinationScope, type CoordinationScope } from "./scope.ts";
import type { FairShareCounters } from "./fair-share/counters.ts";
import { MemoryFairShareCounters } from "./fair-share/memory-counters.ts";
import { PrimaryFairShareCounters } from "./fair-share/primary-counters.ts";
import { RedisFairShareCounters } from "./fair-share/redis-counters.ts";

/**
 * Everything a worker coordinates with the other workers and hosts, each in the form its scope
 * reaches (Redis, the primary, or this process), chosen once here: the conversation locks, the
 * cancel of a run wherever it runs, and the resumable runs' events. A new cross-worker feature adds
 * its three forms in a folder beside these and one line to each case below.
 */
export interface Coordination {
  readonly scope: CoordinationScope;
  readonly locks: ConversationLock;
  /** The runs of this process that hold a conversation (what a cancel stops here). */
  readonly activeRuns: ActiveRuns;
  readonly canceller: RunCanceller;
  readonly streamLogs: StreamLogs;
  /** The users' fair-share counters; undefined when no fair-share limit is configured. */
  readonly fairShare: FairShareCounters | undefined;
  /** Close the three (and the fair-share counters), then the scope's connections. */
  close(): Promise<void>;
}

export interface CoordinationOptions {
  /** Wrapped around every acquire of the lock (its metrics, its trace spans), the first next to the lock. */
  readonly lockDecorators?: readonly LockDecorator[];
  /** Another lock in place of the scope's (tests). */
  readonly lock?: (config: Config, scope: CoordinationScope) => ConversationLock;
  /** Open the fair-share counters (some FAIR_SHARE_* limit is set). */
  readonly fairShare?: boolean;
}

export function openCoordination(config: Config, logger: Logger, options: CoordinationOptions = {}): Coordination {
  const scope = coordinationScope(config, logger);
  const activeRuns = new ActiveRuns();
  const limits = recordLimits(config);
  const report = (error: unknown) => logger.warn(connectionProblemForLog(error), "resumable stream record failed");
  let canceller: RunCanceller;
  let events: EventLog;
  switch (scope.kind) {
    case "redis":
      canceller = new RedisRunCanceller({ link: scope.link, keyPrefix: scope.keyPrefix }, activeRuns);
      events = mirrored(new RedisEventLog({ ...limits, link: scope.link, keyPrefix: scope.keyPrefix, onError: report }), limits);
      break;
    case "primary":
      canceller = new PrimaryRunCanceller(scope.channel, activeRuns);
      events = mirrored(new PrimaryEventLog(scope.channel, limits.maxRunBytes), limits);
      break;
    case "process":
      canceller = new LocalRunCanceller(activeRuns);
      events = new MemoryEventLog(limits);
      break;
  }
  const streamLogs = new StreamLogs(events, report);
  const lock = options.lock?.(config, scope) ?? conversationLock(config, scope);
  const locks = decorateLock(lock, ...(options.lockDecorators ?? []));
  const fairShare = options.fairShare ? fairShareCounters(config, scope) : undefined;
  return {
    scope,
    locks,
    activeRuns,
    canceller,
    streamLogs,
    fairShare,
    async close() {
      await locks.close();
      await canceller.close();
      await streamLogs.close();
      await fairShare?.close();
      closeScope(scope);
    },
  };
}

/**
 * The scope's lock, except with the memory backend: its conversations live in this one process (it
 * runs one worker), so no other process can hold one and the lock stays here.
 */
export function conversationLock(config: Config, scope: CoordinationScope): ConversationLock {
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

/** The scope's fair-share counters; a slot's Redis lease lasts as long as a conversation lock's (REDIS_LOCK_LEASE). */
export function fairShareCounters(config: Config, scope: CoordinationScope): FairShareCounters {
  switch (scope.kind) {
    case "redis":
      return new RedisFairShareCounters({ link: scope.link, keyPrefix: scope.keyPrefix, leaseMs: Math.round(config.REDIS_LOCK_LEASE * 1000) });
    case "primary":
      return new PrimaryFairShareCounters(scope.channel);
    case "process":
      return new MemoryFairShareCounters();
  }
}

function reportLease(event: LeaseEvent): void {
  try {
    workerChannel().send({ ah: "lease", ...event });
  } catch {
    // The primary is gone; this worker exits with it.
  }
}

/**
 * How long after its end a run's events stay in the process that executed it (beside the shared
 * log): long enough for a client that joins a short run as it ends, short enough to keep little.
 */
const MIRROR_KEEP_MS = 5_000;

/** The shared log `shared`, with a copy of this process's own runs for readers here (MirroredEventLog). */
function mirrored(shared: EventLog, limits: MemoryEventLogOptions): EventLog {
  return new MirroredEventLog(shared, new MemoryEventLog({ ...limits, ttlMs: Math.min(limits.ttlMs, MIRROR_KEEP_MS) }));
}

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
