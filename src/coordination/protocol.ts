import type { WaitOutcome } from "../admission/wait-queue.ts";
import type { MetricsJson } from "../observability/metrics.ts";
import type { FairShareAsk, FairShareVerdict } from "./fair-share/counters.ts";
import type { LogEntry, RecordedEvent } from "./run-events/event-log.ts";

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
  /** This worker is the only one: it may keep the lock table itself (answer with lock.delegation). */
  | { ah: "lock.delegate"; epoch: number }
  /** Another worker came: give the table back (answer with lock.returned). */
  | { ah: "lock.revoke"; epoch: number }
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
  | { ah: "events.closed"; id: number }
  /** The answer to fair.admit. */
  | { ah: "fair.verdict"; id: number; verdict: FairShareVerdict }
  /** The run slot of fair.release `id` is free in the primary's table (or the tokens of fair.charge `id` counted). */
  | { ah: "fair.released"; id: number };

/** Worker → primary. */
export type ToPrimary =
  | { ah: "listening"; port: number }
  /** This worker refuses to start (configuration, registry): the primary prints the first generation's first refusal. */
  | { ah: "refused"; message: string }
  | { ah: "live"; seq: number; stalled: number; app: MetricsJson }
  | { ah: "metrics"; seq: number; app: MetricsJson; process: MetricsJson }
  | { ah: "lock.acquire"; id: number; key: string; /** false: refuse a held key at once. */ waits?: false }
  | { ah: "lock.cancel"; id: number }
  | { ah: "lock.release"; id: number }
  /** This worker's lock is set up: the primary may hand it the table when it is the only worker. */
  | { ah: "lock.ready" }
  /** The answer to lock.delegate: taken (the worker now locks in its own table), or declined (it was waiting on the primary). */
  | { ah: "lock.delegation"; epoch: number; accepted: boolean }
  /** The answer to lock.revoke: the keys still held or waited for in the worker's table, each held for it at the primary under `id` until released. */
  | { ah: "lock.returned"; epoch: number; holds: ReadonlyArray<{ readonly id: number; readonly key: string }> }
  | { ah: "ping"; id: number }
  /** Cancel the run holding `key` on whichever worker it runs. */
  | { ah: "run.cancel"; id: number; key: string }
  /** The answer to run.stop: the run stopped here, or null. */
  | { ah: "run.stopped"; id: number; runId: string | null }
  /** Record a resumable run's events in the primary (coordination/run-events), so every worker can replay them; `user` for its size bounds. */
  | { ah: "events.open"; runId: string; key: string; user: string }
  | { ah: "events.append"; runId: string; event: RecordedEvent }
  | { ah: "events.end"; runId: string; clean: boolean }
  /** Read a run's events after `after`, live to the end; `events.stop` ends the read early. */
  | { ah: "events.read"; id: number; runId: string; key: string; after: number }
  | { ah: "events.stop"; id: number }
  /** A Redis conversation lease this worker took or gave up (REDIS_URL): the primary releases a dead worker's. */
  | { ah: "lease"; kind: "held" | "dropped"; key: string; token: string }
  /** Count and check a user's fair share in the primary's table (coordination/fair-share); a run slot taken is this worker's until released. */
  | { ah: "fair.admit"; id: number; ask: FairShareAsk }
  | { ah: "fair.release"; id: number; user: string; slot: string }
  /** Add a run's model tokens to its user's count of the day (answered fair.released once counted). */
  | { ah: "fair.charge"; id: number; user: string; tokens: number };

export function isMessage<T extends { ah: string }>(value: unknown): value is T {
  return typeof value === "object" && value !== null && typeof (value as { ah?: unknown }).ah === "string";
}

/** Several messages of one kind of sender, written as one (MessageBatcher). */
interface Batch<T> {
  readonly ah: "batch";
  readonly messages: readonly T[];
}

/** The messages an IPC message carries: itself, or a batch's, in order. */
export function messagesIn<T extends { ah: string }>(value: unknown): readonly T[] {
  if (!isMessage<T>(value)) return [];
  if (value.ah !== "batch") return [value];
  const { messages } = value as unknown as Batch<unknown>;
  return Array.isArray(messages) ? messages.filter((m): m is T => isMessage<T>(m)) : [];
}

/**
 * Messages sent in one turn of the event loop leave together, as one IPC message written in the
 * check phase: each IPC message is a write to the pipe that wakes the other process, which costs
 * far more than the message (eight runs started together take and give back eight locks). Order is
 * kept. A message is sent at most one turn later than it would have been; a failed write is dropped,
 * as the other side is going away (each side's close handling cleans up).
 */
export class MessageBatcher<T extends { ah: string }> {
  private queue: T[] = [];

  constructor(private readonly write: (message: T | Batch<T>) => void) {}

  send(message: T): void {
    if (this.queue.push(message) === 1) setImmediate(() => this.flush());
  }

  /** Write what is queued now. */
  flush(): void {
    const messages = this.queue;
    if (messages.length === 0) return;
    this.queue = [];
    try {
      this.write(messages.length === 1 ? messages[0]! : { ah: "batch", messages });
    } catch {
      // The channel closed while the messages waited.
    }
  }
}

/** This worker's one queue to its primary, shared by every channel (workerChannel). */
let toPrimary: MessageBatcher<ToPrimary> | undefined;

/** A duplex message channel: a cluster worker's `process`, or an in-memory pair in tests and benches. */
export interface Channel<In, Out> {
  send(message: Out): void;
  onMessage(handler: (message: In) => void): void;
  /** Called once when the other side goes away. */
  onClose(handler: () => void): void;
}

/** The channel of a cluster worker to its primary; messages leave in batches (MessageBatcher). */
export function workerChannel(): Channel<ToWorker, ToPrimary> {
  toPrimary ??= new MessageBatcher((message) => {
    if (process.connected && process.send) process.send(message);
  });
  const batcher = toPrimary;
  return {
    send(message) {
      if (!process.connected || !process.send) throw new Error("the primary is gone");
      batcher.send(message);
    },
    onMessage(handler) {
      process.on("message", (message: unknown) => {
        for (const each of messagesIn<ToWorker>(message)) handler(each);
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
