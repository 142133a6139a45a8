import type { CoordinationScope } from "../../coordination/scope.ts";
import type { ActiveRuns } from "./active-runs.ts";
import { PrimaryRunCanceller } from "./primary-canceller.ts";
import { LocalRunCanceller, type RunCanceller } from "./run-canceller.ts";
import { RedisRunCanceller } from "./redis-canceller.ts";

/** As far as the process's coordination reaches: Redis, the primary's workers, or this process. */
export function defaultRunCanceller(scope: CoordinationScope, active: ActiveRuns): RunCanceller {
  switch (scope.kind) {
    case "redis":
      return new RedisRunCanceller({ link: scope.link, keyPrefix: scope.keyPrefix }, active);
    case "primary":
      return new PrimaryRunCanceller(scope.channel, active);
    case "process":
      return new LocalRunCanceller(active);
  }
}
