import type { Channel, ToPrimary, ToWorker } from "../cluster/protocol.ts";
import type { Runtime } from "../runtime.ts";

/**
 * A cluster worker's answers to its primary: liveness (with the count of stalled runs) and a
 * snapshot of its metrics. Lock messages are handled by the PrimaryConversationLock itself.
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
      send({ ah: "live", seq: message.seq, stalled });
    } else if (message.ah === "metrics?") {
      runtime.metrics.stalledRuns.set(runtime.runTracker.stalledCount());
      void runtime.metrics.snapshot().then(
        (snapshot) => send({ ah: "metrics", seq: message.seq, ...snapshot }),
        () => {},
      );
    }
  });
}
