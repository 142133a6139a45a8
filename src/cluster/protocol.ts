import type { WaitOutcome } from "../admission/wait-queue.ts";
import type { StreamEvent } from "../contract/messages.ts";
import type { MetricsJson } from "../observability/metrics.ts";
import type { LogEntry } from "../runs/stream-log/event-log.ts";

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
  | { ah: "pong"; id: number }
  /** Stop the run holding `key` if it runs on this worker (a cancel asked on any worker). */
  | { ah: "run.stop"; id: number; key: string }
  /** The answer to run.cancel: the stopped run's id, or null when no worker ran one for the key. */
  | { ah: "run.cancelled"; id: number; runId: string | null }
  /** Whether the read `id` found the run for that conversation; its entries follow when it did. */
  | { ah: "events.found"; id: number; found: boolean }
  /** One entry of a resumable run's events, for the read `id`. */
  | { ah: "events.entry"; id: number; entry: LogEntry }
  /** The read `id` ends without an end entry (the run's events expired while it read). */
  | { ah: "events.closed"; id: number };

/** Worker → primary. */
export type ToPrimary =
  | { ah: "listening"; port: number }
  /** This worker refuses to start (configuration, registry): the primary prints the first generation's first refusal. */
  | { ah: "refused"; message: string }
  | { ah: "live"; seq: number; stalled: number; app: MetricsJson }
  | { ah: "metrics"; seq: number; app: MetricsJson; process: MetricsJson }
  | { ah: "lock.acquire"; id: number; key: string }
  | { ah: "lock.cancel"; id: number }
  | { ah: "lock.release"; id: number }
  | { ah: "ping"; id: number }
  /** Cancel the run holding `key` on whichever worker it runs. */
  | { ah: "run.cancel"; id: number; key: string }
  /** The answer to run.stop: the run stopped here, or null. */
  | { ah: "run.stopped"; id: number; runId: string | null }
  /** Record a resumable run's events in the primary (runs/stream-log), so every worker can replay them. */
  | { ah: "events.open"; runId: string; key: string }
  | { ah: "events.append"; runId: string; event: StreamEvent }
  | { ah: "events.end"; runId: string; clean: boolean }
  /** Read a run's events after `after`, live to the end; `events.stop` ends the read early. */
  | { ah: "events.read"; id: number; runId: string; key: string; after: number }
  | { ah: "events.stop"; id: number }
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

/** How the primary answers one worker. */
export type ReplyToWorker = (message: ToWorker) => void;

/** Send over a worker's channel; false when it has closed (the worker is going away, and its `detach` cleans up). */
export function sendToWorker(reply: ReplyToWorker, message: ToWorker): boolean {
  try {
    reply(message);
    return true;
  } catch {
    return false;
  }
}
