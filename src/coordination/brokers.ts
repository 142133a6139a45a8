import { LeaseReaper } from "./locks/lease-reaper.ts";
import type { Config } from "../config/schema.ts";
import { connectionProblemForLog, type Logger } from "../observability/logger.ts";
import { recordLimits } from "./coordination.ts";
import { CancelBroker } from "./cancel/cancel-broker.ts";
import { EventLogBroker } from "./run-events/event-log-broker.ts";
import { LockBroker } from "./locks/lock-broker.ts";
import { FairShareBroker } from "./fair-share/fair-share-broker.ts";
import type { ReplyToWorker, ToPrimary } from "./protocol.ts";

/**
 * What the primary serves its workers besides supervision, as one object: the conversation lock
 * table, cancels across the workers, the resumable runs' events and the users' fair-share counters
 * (both used without Redis), and with Redis the release of a dead worker's leases. The supervisor attaches each worker it forks, hands
 * it every message, and detaches it when it exits.
 */
export class PrimaryBrokers {
  private readonly locks: LockBroker;
  private readonly cancels = new CancelBroker();
  private readonly events: EventLogBroker;
  readonly fairShare = new FairShareBroker();
  /** With REDIS_URL: releases the Redis leases of a worker that died (connected once the startup checks passed). */
  private reaper: LeaseReaper | undefined;
  private readonly attached = new Set<number>();

  constructor(
    private readonly config: Config,
    private readonly logger: Logger,
  ) {
    this.locks = new LockBroker({ waitMs: config.THREAD_QUEUE_TIMEOUT * 1000, maxWaiters: config.THREAD_QUEUE_MAX_WAITERS }, (worker, kept) =>
      logger.info({ worker }, kept ? "the only worker keeps the conversation lock table" : "the conversation lock table is back at the primary"),
    );
    this.events = new EventLogBroker(recordLimits(config));
  }

  /** With REDIS_URL, connect the lease reaper (after the startup checks, which report an unreachable Redis themselves). */
  connect(): void {
    const { config, logger } = this;
    if (!config.REDIS_URL || this.reaper) return;
    this.reaper = new LeaseReaper({
      url: config.REDIS_URL,
      keyPrefix: `${config.REDIS_KEY_PREFIX}:`,
      onError: (error) => logger.warn(connectionProblemForLog(error), "redis connection problem"),
    });
  }

  attach(workerId: number, reply: ReplyToWorker): void {
    this.attached.add(workerId);
    this.locks.attach(workerId, reply);
    this.cancels.attach(workerId, reply);
    this.events.attach(workerId, reply);
    this.fairShare.attach(workerId, reply);
  }

  /** Handle one worker message; false when it is none of the brokers'. */
  handle(workerId: number, message: ToPrimary): boolean {
    if (message.ah === "lease") {
      // A report arriving after the worker's exit was handled is dropped: that lease just expires.
      if (this.attached.has(workerId)) this.reaper?.record(workerId, message);
      this.logger.debug({ worker: workerId, lease: message.kind }, "conversation lease reported");
      return true;
    }
    return (
      this.locks.handle(workerId, message) ||
      this.cancels.handle(workerId, message) ||
      this.events.handle(workerId, message) ||
      this.fairShare.handle(workerId, message)
    );
  }

  /** A worker exited: drop its waits, free its locks (and its Redis leases) and its users' run slots, end its runs' records. */
  detach(workerId: number): void {
    this.attached.delete(workerId);
    this.locks.detach(workerId);
    this.cancels.detach(workerId);
    this.events.detach(workerId);
    const slots = this.fairShare.detach(workerId);
    if (slots > 0) this.logger.info({ worker: workerId, slots }, "dropped a dead worker's fair-share run slots");
    this.reaper?.reap(workerId).then(
      (released) => {
        if (released > 0) this.logger.info({ worker: workerId, released }, "released a dead worker's conversation leases");
      },
      () => {},
    );
  }

  close(): void {
    this.reaper?.close();
  }
}
