import type { StreamEvent } from "../../contract/messages.ts";
import type { EventLog, LogEntry, LogReader, RunEventWriter } from "./event-log.ts";

interface Recording {
  readonly key: string;
  readonly entries: LogEntry[];
  ended: boolean;
  /** Readers waiting for the next entry. */
  readonly wakers: Set<() => void>;
}

/**
 * Recorded runs in this process's memory: every run of a one-process service, the runs a cluster
 * worker serves itself, and (in the primary) every worker's runs of the host. A run is forgotten
 * `ttlMs` after it ended, or `maxAgeMs` after it began if its end never came (a worker that died).
 */
export class MemoryEventLog implements EventLog {
  private readonly runs = new Map<string, Recording>();
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxAgeMs: number,
  ) {}

  /** Runs recorded now (tests and diagnostics). */
  get size(): number {
    return this.runs.size;
  }

  open(runId: string, key: string): RunEventWriter {
    const recording: Recording = { key, entries: [], ended: false, wakers: new Set() };
    this.runs.set(runId, recording);
    const forget = this.forgetLater(runId, recording, this.maxAgeMs);
    const push = (entry: LogEntry) => {
      if (recording.ended) return;
      recording.entries.push(entry);
      for (const wake of recording.wakers) wake();
    };
    return {
      append: (event: StreamEvent) => push({ seq: recording.entries.length + 1, event }),
      end: (clean: boolean) => {
        push({ seq: recording.entries.length + 1, end: true, clean });
        recording.ended = true;
        clearTimeout(forget);
        this.timers.delete(forget);
        this.forgetLater(runId, recording, this.ttlMs);
      },
    };
  }

  private forgetLater(runId: string, recording: Recording, ms: number): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (this.runs.get(runId) === recording) this.runs.delete(runId);
      for (const wake of recording.wakers) wake();
    }, ms);
    timer.unref();
    this.timers.add(timer);
    return timer;
  }

  read(runId: string, key: string, after: number, signal: AbortSignal): Promise<LogReader | undefined> {
    const recording = this.runs.get(runId);
    if (!recording || recording.key !== key) return Promise.resolve(undefined);
    return Promise.resolve(this.follow(runId, recording, after, signal));
  }

  private async *follow(runId: string, recording: Recording, after: number, signal: AbortSignal): AsyncGenerator<LogEntry> {
    let next = Math.max(0, after);
    for (;;) {
      while (next < recording.entries.length) {
        const entry = recording.entries[next++]!;
        yield entry;
        if ("end" in entry) return;
      }
      if (signal.aborted || recording.ended || this.runs.get(runId) !== recording) return;
      await new Promise<void>((resolve) => {
        const wake = () => {
          recording.wakers.delete(wake);
          signal.removeEventListener("abort", wake);
          resolve();
        };
        recording.wakers.add(wake);
        signal.addEventListener("abort", wake, { once: true });
      });
    }
  }

  async close(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    for (const recording of this.runs.values()) for (const wake of recording.wakers) wake();
    this.runs.clear();
  }
}
