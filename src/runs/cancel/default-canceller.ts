import cluster from "node:cluster";
import { workerChannel } from "../../cluster/protocol.ts";
import type { Config } from "../../config/schema.ts";
import { connectionProblemForLog, type Logger } from "../../observability/logger.ts";
import type { ActiveRuns } from "./active-runs.ts";
import { PrimaryRunCanceller } from "./primary-canceller.ts";
import { LocalRunCanceller, type RunCanceller } from "./run-canceller.ts";
import { RedisRunCanceller } from "./redis-canceller.ts";

/** As far as the conversation lock reaches: Redis when REDIS_URL is set; else the primary in a cluster worker; else this process. */
export function defaultRunCanceller(config: Config, logger: Logger, active: ActiveRuns): RunCanceller {
  if (config.REDIS_URL) {
    return new RedisRunCanceller(
      {
        url: config.REDIS_URL,
        keyPrefix: `${config.REDIS_KEY_PREFIX}:`,
        onError: (error) => logger.warn(connectionProblemForLog(error), "redis connection problem"),
      },
      active,
    );
  }
  if (cluster.isWorker) return new PrimaryRunCanceller(workerChannel(), active);
  return new LocalRunCanceller(active);
}
