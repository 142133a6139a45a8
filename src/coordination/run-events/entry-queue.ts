import { isLast, type LogEntry, type LogReader } from "./event-log.ts";

/**
 * Entries that arrive from elsewhere (the primary; the run itself, for the stream that started it)
 * handed to one reader in order: `push` as they come, `close` when no more will; the reader's iteration
 * ends after the last entry (isLast) or the close.
 */
export class EntryQueue {
  private readonly entries: LogEntry[] = [];
  private closed = false;
  private wake: (() => void) | undefined;

  push(entry: LogEntry): void {
    this.entries.push(entry);
    this.wake?.();
  }

  close(): void {
    this.closed = true;
    this.wake?.();
  }

  /** The entries, live; `onDone` runs once when the reader stops (end, close, or it stopped reading). */
  reader(onDone: () => void): LogReader {
    const take = async function* (queue: EntryQueue): AsyncGenerator<LogEntry> {
      try {
        for (;;) {
          const entry = queue.entries.shift();
          if (entry) {
            yield entry;
            if (isLast(entry)) return;
            continue;
          }
          if (queue.closed) return;
          await new Promise<void>((resolve) => {
            queue.wake = () => {
              queue.wake = undefined;
              resolve();
            };
          });
        }
      } finally {
        onDone();
      }
    };
    return take(this);
  }
}
