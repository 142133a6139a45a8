import type { RunQueueStore } from "../checkpoints/run-queue.ts";
import type { Config } from "../config/schema.ts";
import type { Logger } from "../observability/logger.ts";
import { DatabaseRunQueue } from "./database-engine.ts";
import type { RunQueueEngine } from "./run-queue-engine.ts";

/**
 * The worker's run queue: BullMQ over REDIS_URL when it is set (every host's workers share it),
 * else the checkpoint database's (`store`: the workers of one host on SQLite, or every host on
 * PostgreSQL). BullMQ is an optional integration: it is loaded only when REDIS_URL is set.
 */
export async function openRunQueue(config: Config, store: RunQueueStore, logger: Logger): Promise<RunQueueEngine> {
  const leaseMs = config.BACKGROUND_RUN_LEASE * 1000;
  const pollMs = config.BACKGROUND_POLL_INTERVAL * 1000;
  if (config.REDIS_URL) {
    const { BullmqRunQueue } = await import("./bullmq-engine.ts");
    return new BullmqRunQueue({ url: config.REDIS_URL, keyPrefix: config.REDIS_KEY_PREFIX, leaseMs, pollMs, logger });
  }
  return new DatabaseRunQueue(store, { leaseMs, pollMs, logger });
}
