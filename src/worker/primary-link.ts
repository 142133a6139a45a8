import type { Channel, ToPrimary, ToWorker } from "../coordination/protocol.ts";
import type { Runtime } from "../runtime.ts";

/**
 * A cluster worker's answers to its primary: liveness (with the count of stalled runs and its
 * service metrics) and a full metrics snapshot for a scrape. Lock messages are handled by the PrimaryConversationLock itself.
 */
export function answerPrimary(channel: Channel<ToWorker, ToPrimary>, runtime: Runtime): void {
  const send = (message: ToPrimary) => {
    try {
      channel.send(message);
    } catch {
      // The primary is gone; Node ends the worker on disconnect.
    }
  };
  channel.onMessage((message) => {
    if (message.ah === "live?") {
      const stalled = runtime.runTracker.stalledCount();
      runtime.metrics.stalledRuns.set(stalled);
      // The service metrics ride along, so the primary keeps a dead worker's counters (fresh to one poll).
      void runtime.metrics.registry.getMetricsAsJSON().then(
        (app) => send({ ah: "live", seq: message.seq, stalled, app }),
        () => {},
      );
    } else if (message.ah === "metrics?") {
      runtime.metrics.stalledRuns.set(runtime.runTracker.stalledCount());
      void runtime.metrics.snapshot().then(
        (snapshot) => send({ ah: "metrics", seq: message.seq, ...snapshot }),
        () => {},
      );
    }
  });
}
