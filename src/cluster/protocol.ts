import type { WaitOutcome } from "../admission/wait-queue.ts";
import type { MetricsJson } from "../observability/metrics.ts";

/**
 * The IPC messages between the primary and its workers. Every message carries `ah` (its kind), so
 * other users of the channel (Node's own cluster messages) are told apart and ignored.
 */

/**
 * Exit code of a worker (or primary) that refuses to start: configuration or registry. An
 * unreachable database is not a refusal: the worker starts not ready and waits for it.
 */
export const STARTUP_REFUSED = 2;

/** Primary → worker. */
export type ToWorker =
  | { ah: "live?"; seq: number }
  | { ah: "metrics?"; seq: number }
  | { ah: "lock.result"; id: number; outcome: WaitOutcome; waitedMs: number }
  /** The lock of request `id` is free in the primary's table (the answer to lock.release). */
  | { ah: "lock.released"; id: number }
  | { ah: "pong"; id: number };

/** Worker → primary. */
export type ToPrimary =
  | { ah: "listening"; port: number }
  | { ah: "live"; seq: number; stalled: number; app: MetricsJson }
  | { ah: "metrics"; seq: number; app: MetricsJson; process: MetricsJson }
  | { ah: "lock.acquire"; id: number; key: string }
  | { ah: "lock.cancel"; id: number }
  | { ah: "lock.release"; id: number }
  | { ah: "ping"; id: number }
  /** A Redis conversation lease this worker took or gave up (REDIS_URL): the primary releases a dead worker's. */
  | { ah: "lease"; kind: "held" | "dropped"; key: string; token: string };

export function isMessage<T extends { ah: string }>(value: unknown): value is T {
  return typeof value === "object" && value !== null && typeof (value as { ah?: unknown }).ah === "string";
}

/** A duplex message channel: a cluster worker's `process`, or an in-memory pair in tests and benches. */
export interface Channel<In, Out> {
  send(message: Out): void;
  onMessage(handler: (message: In) => void): void;
  /** Called once when the other side goes away. */
  onClose(handler: () => void): void;
}

/** The channel of a cluster worker to its primary. */
export function workerChannel(): Channel<ToWorker, ToPrimary> {
  return {
    send(message) {
      if (!process.connected || !process.send) throw new Error("the primary is gone");
      process.send(message);
    },
    onMessage(handler) {
      process.on("message", (message: unknown) => {
        if (isMessage<ToWorker>(message)) handler(message);
      });
    },
    onClose(handler) {
      process.once("disconnect", handler);
    },
  };
}
