import { DROPPED, type EventLog, type LogEntry, type LogReader, type RunEventWriter, type RecordedEvent } from "./event-log.ts";
import { entryBytes, RecordBudget, type BudgetedRecord, type RecordBounds } from "./record-budget.ts";

export interface MemoryEventLogOptions extends RecordBounds {
  /** STREAM_RESUME_TTL: how long a run is kept after it ended. */
  readonly ttlMs: number;
  /** The longest a run is kept if its end never comes (a worker that died). */
  readonly maxAgeMs: number;
}

interface Recording {
  readonly key: string;
  /** The entries kept, entry i with sequence number i + 1; emptied when the record is dropped. */
  readonly entries: LogEntry[];
  /** The entries the run has made (kept or not). */
  made: number;
  ended: boolean;
  readonly budget: BudgetedRecord;
  /** Readers waiting for the next entry. */
  readonly wakers: Set<() => void>;
}

/**
 * Recorded runs in this process's memory: every run of a one-process service, and (in the primary)
 * every worker's runs of the host. A run is forgotten `ttlMs` after it ended, or `maxAgeMs` after it
 * began if its end never came (a worker that died); a record that passes a size bound is dropped
 * earlier (RecordBudget), leaving only its key, so a reader learns it is no longer kept.
 */
export class MemoryEventLog implements EventLog {
  private readonly runs = new Map<string, Recording>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly budget: RecordBudget;

  constructor(private readonly options: MemoryEventLogOptions) {
    this.budget = new RecordBudget(options);
  }

  /** Runs recorded now, dropped ones included (tests and diagnostics). */
  get size(): number {
    return this.runs.size;
  }

  /** The bytes of entries kept now (tests and diagnostics). */
  get bytes(): number {
    return this.budget.bytes;
  }

  open(runId: string, key: string, user: string): RunEventWriter {
    const wakers = new Set<() => void>();
    const entries: LogEntry[] = [];
    const budget = this.budget.open(user, () => {
      entries.length = 0;
      for (const wake of wakers) wake();
    });
    const recording: Recording = { key, entries, made: 0, ended: false, budget, wakers };
    // A run opened again (a background run's next attempt) starts its record over: readers of the
    // old one stop.
    const before = this.runs.get(runId);
    this.runs.set(runId, recording);
    if (before) for (const wake of before.wakers) wake();
    const forget = this.forgetLater(runId, recording, this.options.maxAgeMs);
    const push = (entry: LogEntry, json: number) => {
      if (!this.budget.charge(budget, entryBytes(json))) return;
      entries.push(entry);
      for (const wake of wakers) wake();
    };
    return {
      append: (event: RecordedEvent, length?: number) => {
        if (recording.ended) return;
        const seq = ++recording.made;
        // Sized before it is kept: a dropped record keeps nothing, however large the event.
        if (!budget.gone) push({ seq, event }, length ?? JSON.stringify(event).length);
      },
      end: (clean: boolean) => {
        if (recording.ended) return;
        const seq = ++recording.made;
        if (!budget.gone) push({ seq, end: true, clean }, 0);
        recording.ended = true;
        this.budget.ended(budget);
        for (const wake of wakers) wake();
        clearTimeout(forget);
        this.timers.delete(forget);
        this.forgetLater(runId, recording, this.options.ttlMs);
      },
      // The next execution in this process opens the run again, which starts its record over.
      abandon: () => undefined,
    };
  }

  /**
   * Let the record of `runId` go now, before its time (it is kept elsewhere too): its readers stop
   * without a last entry, and a read of it finds nothing.
   */
  forget(runId: string): void {
    const recording = this.runs.get(runId);
    if (recording) this.letGo(runId, recording);
  }

  /** The record is no longer kept: unlisted (unless a newer one of its run has replaced it), its bytes freed, its readers woken to stop. */
  private letGo(runId: string, recording: Recording): void {
    if (this.runs.get(runId) === recording) this.runs.delete(runId);
    this.budget.release(recording.budget);
    for (const wake of recording.wakers) wake();
  }

  private forgetLater(runId: string, recording: Recording, ms: number): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.letGo(runId, recording);
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
    const { entries } = recording;
    let next = Math.max(0, after);
    for (;;) {
      if (recording.budget.dropped) {
        yield DROPPED;
        return;
      }
      while (next < entries.length) {
        const entry = entries[next++]!;
        yield entry;
        if ("end" in entry) return;
      }
      if (recording.ended) {
        // Asked from at or past the end entry: the end, at once.
        const end = entries.at(-1);
        if (end) yield end;
        return;
      }
      if (signal.aborted || this.runs.get(runId) !== recording) return;
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
