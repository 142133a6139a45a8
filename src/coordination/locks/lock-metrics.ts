import type { ServiceMetrics } from "../../observability/metrics.ts";
import type { LockOutcome } from "./conversation-lock.ts";
import type { LockDecorator } from "./lock-decorator.ts";

/**
 * The conversation lock, counted: requests taking it now, queue waits, 409s by reason, wait
 * durations, lock-service errors.
 * Implementations report `waitedMs: 0` exactly when the lock was free, so a wait is any grant
 * with a positive wait.
 */
export function countLockOutcomes(metrics: ServiceMetrics): LockDecorator {
  return (acquire) =>
    async (key, signal, waits): Promise<LockOutcome> => {
      const started = performance.now();
      let outcome: LockOutcome;
      metrics.lockAcquiring.inc();
      try {
        outcome = await acquire(key, signal, waits);
      } catch (error) {
        metrics.lockErrors.inc();
        throw error;
      } finally {
        metrics.lockAcquiring.dec();
      }
      const waited = (performance.now() - started) / 1000;
      if (outcome.ok) {
        if (outcome.lease.waitedMs > 0) {
          metrics.lockWaits.inc();
          metrics.lockWaitDuration.observe({ outcome: "granted" }, outcome.lease.waitedMs / 1000);
        }
      } else if (outcome.reason === "aborted") {
        metrics.lockWaits.inc();
        metrics.lockWaitDuration.observe({ outcome: "aborted" }, waited);
      } else {
        metrics.lockConflicts.inc({ reason: outcome.reason });
        if (outcome.reason === "wait_expired") {
          metrics.lockWaits.inc();
          metrics.lockWaitDuration.observe({ outcome: "expired" }, waited);
        }
      }
      return outcome;
    };
}
