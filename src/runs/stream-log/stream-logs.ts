import type { StreamEvent } from "../../contract/messages.ts";
import type { EventLog, LogReader, RunEventWriter } from "./event-log.ts";
import type { MemoryEventLog } from "./memory-event-log.ts";

/**
 * The resumable runs' events as this process keeps them: always in its own memory (the stream that
 * started the run reads them from there, so it never waits on another service), and, in a cluster or
 * with Redis, also where every worker can read them (the primary's log, or Redis Streams). A resume
 * looks here first, then there.
 */
export class StreamLogs {
  constructor(
    private readonly local: MemoryEventLog,
    private readonly shared: EventLog | undefined,
    private readonly onSharedError: (error: unknown) => void = () => {},
  ) {}

  open(runId: string, key: string): RunEventWriter {
    const local = this.local.open(runId, key);
    let shared: RunEventWriter | undefined;
    try {
      shared = this.shared?.open(runId, key);
    } catch (error) {
      this.onSharedError(error);
    }
    const both = (write: (writer: RunEventWriter) => void) => {
      write(local);
      if (!shared) return;
      try {
        write(shared);
      } catch (error) {
        this.onSharedError(error);
      }
    };
    return {
      append: (event: StreamEvent) => both((writer) => writer.append(event)),
      end: (clean: boolean) => both((writer) => writer.end(clean)),
    };
  }

  /** The run's entries from this process's own record (the stream that started it). */
  readLocal(runId: string, key: string, after: number, signal: AbortSignal): Promise<LogReader | undefined> {
    return this.local.read(runId, key, after, signal);
  }

  /** The run's entries wherever they are kept; undefined when no log knows the run for this conversation. */
  async read(runId: string, key: string, after: number, signal: AbortSignal): Promise<LogReader | undefined> {
    return (await this.local.read(runId, key, after, signal)) ?? (await this.shared?.read(runId, key, after, signal));
  }

  async close(): Promise<void> {
    await this.local.close();
    await this.shared?.close();
  }
}
