import type { Channel, ToPrimary, ToWorker } from "../protocol.ts";
import { EntryQueue } from "./entry-queue.ts";
import type { EventLog, LogReader, RunEventWriter, RecordedEvent } from "./event-log.ts";
import { entryBytes } from "./record-budget.ts";

/** How long a read waits for the primary to say whether it knows the run. */
const FOUND_TIMEOUT_MS = 2_000;

interface Read {
  found?: (found: boolean) => void;
  readonly queue: EntryQueue;
}

/**
 * Resumable runs' events kept by the primary (event-log-broker.ts), so a stream started on
 * one worker resumes on any other of the host without Redis. The primary bounds what it keeps; a run
 * past its own bound (`maxRunBytes`, counted as the primary counts it) is dropped there, so its later
 * events are not sent at all.
 */
export class PrimaryEventLog implements EventLog {
  private nextId = 1;
  private readonly reads = new Map<number, Read>();
  private closed = false;

  constructor(
    private readonly channel: Channel<ToWorker, ToPrimary>,
    private readonly maxRunBytes = Number.POSITIVE_INFINITY,
  ) {
    channel.onMessage((message) => {
      switch (message.ah) {
        case "events.found":
          this.reads.get(message.id)?.found?.(message.found);
          break;
        case "events.entry":
          this.reads.get(message.id)?.queue.push(message.entry);
          break;
        case "events.closed":
          this.reads.get(message.id)?.queue.close();
          break;
        default:
          break;
      }
    });
    channel.onClose(() => {
      this.closed = true;
      for (const read of this.reads.values()) {
        read.found?.(false);
        read.queue.close();
      }
    });
  }

  /** Throws when the primary is gone (the caller reports it). */
  private send(message: ToPrimary): void {
    this.channel.send(message);
  }

  open(runId: string, key: string, user: string): RunEventWriter {
    this.send({ ah: "events.open", runId, key, user });
    let bytes = 0;
    return {
      append: (event: RecordedEvent, length?: number) => {
        // The event that passes the bound still goes: the primary drops the record when it counts it.
        if (bytes > this.maxRunBytes) return;
        bytes += entryBytes(length ?? JSON.stringify(event).length);
        this.send({ ah: "events.append", runId, event });
      },
      end: (clean: boolean) => this.send({ ah: "events.end", runId, clean }),
      // The primary's record is the new owner's; if this worker dies, the broker ends what it still holds.
      abandon: () => undefined,
    };
  }

  read(runId: string, key: string, after: number, signal: AbortSignal): Promise<LogReader | undefined> {
    if (this.closed) return Promise.reject(new Error("the primary is gone"));
    const id = this.nextId++;
    const read: Read = { queue: new EntryQueue() };
    this.reads.set(id, read);
    const stop = () => {
      read.queue.close();
      if (!this.reads.delete(id)) return;
      try {
        this.send({ ah: "events.stop", id });
      } catch {
        // The primary is gone: nothing reads there any more.
      }
    };
    return new Promise<LogReader | undefined>((resolve, reject) => {
      const timer = setTimeout(() => {
        stop();
        reject(new Error("the primary did not answer the read"));
      }, FOUND_TIMEOUT_MS);
      read.found = (found) => {
        clearTimeout(timer);
        read.found = undefined;
        if (!found) {
          this.reads.delete(id);
          resolve(undefined);
          return;
        }
        signal.addEventListener("abort", stop, { once: true });
        resolve(
          read.queue.reader(() => {
            signal.removeEventListener("abort", stop);
            stop();
          }),
        );
      };
      try {
        this.send({ ah: "events.read", id, runId, key, after });
      } catch (error) {
        clearTimeout(timer);
        this.reads.delete(id);
        reject(error as Error);
      }
    });
  }

  async close(): Promise<void> {
    for (const read of this.reads.values()) read.queue.close();
  }
}
