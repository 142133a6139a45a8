import type { EventLog, LogReader, RunEventWriter, RecordedEvent } from "./event-log.ts";

/**
 * The resumable runs' events as this process keeps them: in its own memory (one process), in the
 * primary's (a cluster worker without Redis), or in Redis Streams; the one place every resume reads.
 * The stream that started a run does not read them back: it gets its events straight from the run
 * (http/resumable-stream.ts), so it never waits on another service and is never cut by a size bound.
 * A record that cannot be written (the primary or Redis gone) is reported and the run goes on.
 */
export class StreamLogs {
  constructor(
    private readonly log: EventLog,
    private readonly onWriteError: (error: unknown) => void = () => {},
  ) {}

  open(runId: string, key: string, user: string): RunEventWriter {
    let writer: RunEventWriter | undefined;
    try {
      writer = this.log.open(runId, key, user);
    } catch (error) {
      this.onWriteError(error);
    }
    const write = (step: (writer: RunEventWriter) => void) => {
      if (!writer) return;
      try {
        step(writer);
      } catch (error) {
        this.onWriteError(error);
      }
    };
    return {
      append: (event: RecordedEvent, length?: number) => write((w) => w.append(event, length)),
      end: (clean: boolean) => write((w) => w.end(clean)),
      abandon: () => write((w) => w.abandon()),
    };
  }

  /** The run's entries after `after`; undefined when the log does not know the run for this conversation. */
  read(runId: string, key: string, after: number, signal: AbortSignal): Promise<LogReader | undefined> {
    return this.log.read(runId, key, after, signal);
  }

  async close(): Promise<void> {
    await this.log.close();
  }
}
