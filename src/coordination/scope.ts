import cluster from "node:cluster";
import { workerChannel, type Channel, type ToPrimary, type ToWorker } from "./protocol.ts";
import type { Config } from "../config/schema.ts";
import { connectionProblemForLog, type Logger } from "../observability/logger.ts";
import { RedisLink } from "./redis-link.ts";

/**
 * How far this process's coordination reaches (its conversation locks, cancels), decided once at
 * startup: every host through Redis when REDIS_URL is set, else the workers of this host through
 * the primary in a cluster worker, else this process alone. The composition root hands it to
 * everything that coordinates, and closes it last.
 */
export type CoordinationScope =
  | { readonly kind: "redis"; readonly link: RedisLink; /** REDIS_KEY_PREFIX with its separator. */ readonly keyPrefix: string }
  | { readonly kind: "primary"; readonly channel: Channel<ToWorker, ToPrimary> }
  | { readonly kind: "process" };

export function coordinationScope(config: Config, logger: Logger): CoordinationScope {
  if (config.REDIS_URL) {
    const link = new RedisLink(config.REDIS_URL, (error) => logger.warn(connectionProblemForLog(error), "redis connection problem"));
    return { kind: "redis", link, keyPrefix: `${config.REDIS_KEY_PREFIX}:` };
  }
  if (cluster.isWorker) return { kind: "primary", channel: workerChannel() };
  return { kind: "process" };
}

/** Close what the scope holds (the Redis link), once everything using it has closed. */
export function closeScope(scope: CoordinationScope): void {
  if (scope.kind === "redis") scope.link.close();
}
