import type { LogEntry, LogReader } from "./event-log.ts";

/**
 * Entries that arrive from elsewhere (the primary, Redis) handed to one reader in order: `push` as they
 * come, `close` when no more will; the reader's iteration ends after the end entry or the close.
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
            if ("end" in entry) return;
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
