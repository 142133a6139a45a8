import type { RunQueueStore } from "../checkpoints/run-queue.ts";
import type { Config } from "../config/schema.ts";
import type { Logger } from "../observability/logger.ts";
import { DatabaseRunQueue } from "./database-engine.ts";
import type { RunQueueEngine } from "./run-queue-engine.ts";

/** The worker's run queue: the checkpoint database's (`store`). */
export function openRunQueue(config: Config, store: RunQueueStore, logger: Logger): RunQueueEngine {
  return new DatabaseRunQueue(store, { leaseMs: config.BACKGROUND_RUN_LEASE * 1000, pollMs: config.BACKGROUND_POLL_INTERVAL * 1000, logger });
}
