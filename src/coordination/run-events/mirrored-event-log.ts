import { isLast, type EventLog, type LogEntry, type LogReader, type RunEventWriter, type RecordedEvent } from "./event-log.ts";
import type { MemoryEventLog } from "./memory-event-log.ts";

/**
 * A shared event log (the primary's, or Redis) with a copy, in this process, of the runs this
 * process executes. Every run is recorded in the shared log as before; a reader in the process that
 * executes the run (a client joining the background run it has just started, on the same connection)
 * follows the copy here instead of asking the primary or Redis for each entry. The copy is kept while
 * the run executes and a short time after (`local`'s time to live); whatever it cannot give (it was let
 * go, dropped by this process's bounds, or the run was taken over by another worker) the reader takes
 * from the shared log, from the entry after the last it got.
 */
export class MirroredEventLog implements EventLog {
  constructor(
    private readonly shared: EventLog,
    private readonly local: MemoryEventLog,
  ) {}

  open(runId: string, key: string, user: string): RunEventWriter {
    // The shared record first: if it cannot be opened, nothing of the run is kept here either.
    const shared = this.shared.open(runId, key, user);
    const here = this.local.open(runId, key, user);
    return {
      append: (event: RecordedEvent, length?: number) => {
        // Measured once for both records (a values event carries the whole state).
        const measured = length ?? JSON.stringify(event).length;
        here.append(event, measured);
        shared.append(event, measured);
      },
      end: (clean: boolean) => {
        here.end(clean);
        shared.end(clean);
      },
      abandon: () => {
        this.local.forget(runId);
        shared.abandon();
      },
    };
  }

  async read(runId: string, key: string, after: number, signal: AbortSignal): Promise<LogReader | undefined> {
    const here = await this.local.read(runId, key, after, signal);
    if (!here) return this.shared.read(runId, key, after, signal);
    return this.follow(here, runId, key, after, signal);
  }

  /** The copy's entries, then, if it stops short of the run's last entry, the shared log's from there. */
  private async *follow(here: LogReader, runId: string, key: string, after: number, signal: AbortSignal): AsyncGenerator<LogEntry> {
    let last = after;
    for await (const entry of here) {
      // This process's bounds are not the shared log's: a copy dropped here may be kept there.
      if ("dropped" in entry) break;
      yield entry;
      if (isLast(entry)) return;
      last = entry.seq;
    }
    if (signal.aborted) return;
    const rest = await this.shared.read(runId, key, last, signal);
    if (rest) yield* rest;
  }

  async close(): Promise<void> {
    await this.local.close();
    await this.shared.close();
  }
}
