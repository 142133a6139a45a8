import type { Tracing } from "../../observability/tracing.ts";
import type { LockDecorator } from "./lock-decorator.ts";

/** The conversation lock, traced: a span around each acquire under a request or run span. */
export function traceLockWaits(tracing: Tracing): LockDecorator {
  return (acquire) => async (key, signal, waits) => {
    const span = tracing.startLockWait();
    if (!span) return acquire(key, signal, waits);
    try {
      const outcome = await acquire(key, signal, waits);
      if (outcome.ok) span.granted(outcome.lease.waitedMs);
      else span.refused(outcome.reason);
      return outcome;
    } catch (error) {
      span.failed();
      throw error;
    }
  };
}
