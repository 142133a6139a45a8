import type { StreamEvent } from "../../contract/messages.ts";

/**
 * The recorded events of a resumable stream (`stream_resumable: true`): each event of the run in
 * order with its sequence number (1, 2, …), then one end entry. A reader that lost its connection
 * asks for the entries after the last number it saw and follows the run live to its end.
 */
export type LogEntry =
  | { readonly seq: number; readonly event: StreamEvent }
  /** The run ended: `clean` after a clean end (SSE then sends `[DONE]`), false after an error event. */
  | { readonly seq: number; readonly end: true; readonly clean: boolean };

/** Records one run's events. Appends are ordered; `end` is called once, last. */
export interface RunEventWriter {
  append(event: StreamEvent): void;
  end(clean: boolean): void;
}

/** What a reader gets: the entries after the asked position, live until the end entry (included). */
export type LogReader = AsyncIterable<LogEntry>;

/** Where resumable runs' events are kept while they run and STREAM_RESUME_TTL seconds after they end. */
export interface EventLog {
  /** Start recording `runId`, a run on the conversation with storage key `key` (its owner's). */
  open(runId: string, key: string): RunEventWriter;
  /**
   * The entries of `runId` after sequence number `after`, live until the end; undefined when the run
   * is unknown here, has expired, or belongs to another conversation than `key` (so another user's run
   * looks the same as none). Reading stops when `signal` aborts.
   */
  read(runId: string, key: string, after: number, signal: AbortSignal): Promise<LogReader | undefined>;
  close(): Promise<void>;
}

/** A stream operation's answer that replays a run's recorded events. */
export interface RunReplay {
  /** The run's agent (for metrics and logs). */
  readonly agent: string;
  readonly entries: LogReader;
}
