/**
 * One event of a resumable stream as recorded: a JSON object, in whichever framing's shape the
 * stream that recorded it uses (agenthost's RecordedEvent, or a LangGraph Platform event). The
 * stream that reads it back is of the same kind: a record is read only through its run's own routes.
 */
export type RecordedEvent = Readonly<Record<string, unknown>>;

/**
 * The recorded events of a resumable stream (`stream_resumable: true`): each event of the run in
 * order with its sequence number (1, 2, …), then one end entry. A reader that lost its connection
 * asks for the entries after the last number it saw and follows the run live to its end.
 */
export type LogEntry =
  | { readonly seq: number; readonly event: RecordedEvent }
  /** The run ended: `clean` after a clean end (SSE then sends `[DONE]`), false after an error event. */
  | { readonly seq: number; readonly end: true; readonly clean: boolean }
  /**
   * The run's events are no longer kept: its record passed a size bound (STREAM_RESUME_MAX_*_BYTES)
   * and was dropped. Every reader gets this in place of whatever it had not read yet, and nothing after.
   */
  | { readonly dropped: true };

/** The dropped record's one entry. */
export const DROPPED: LogEntry = Object.freeze({ dropped: true });

/** Whether `entry` is the last a reader gets: the run's end, or its record dropped. */
export function isLast(entry: LogEntry): boolean {
  return "end" in entry || "dropped" in entry;
}

/** Records one run's events. Appends are ordered; `end` is called once, last. */
export interface RunEventWriter {
  /**
   * `length`: the event's JSON length, when the caller has measured it already (a record's size is
   * counted from it, so a large state is not serialized once more only to be measured).
   */
  append(event: RecordedEvent, length?: number): void;
  end(clean: boolean): void;
  /**
   * This process stops recording the run without ending its record: another execution took the run
   * over (a background run's next attempt) and records it from now on. What this process kept of it
   * for its own readers is let go; the shared record is left to the new owner.
   */
  abandon(): void;
}

/** What a reader gets: the entries after the asked position, live until the last entry (included). */
export type LogReader = AsyncIterable<LogEntry>;

/** Where resumable runs' events are kept while they run and STREAM_RESUME_TTL seconds after they end. */
export interface EventLog {
  /**
   * Start recording `runId`, a run of `user` on the conversation with storage key `key` (its owner's).
   * Opening a run recorded already starts its record over (a background run's next attempt): readers of
   * the old record stop.
   */
  open(runId: string, key: string, user: string): RunEventWriter;
  /**
   * The entries of `runId` after sequence number `after`, live until the end; undefined when the run
   * is unknown here, has expired, or belongs to another conversation than `key` (so another user's run
   * looks the same as none). A run that has ended gives its end entry to every reader, also one whose
   * `after` is at or past it, and a dropped record its DROPPED entry. Reading stops when `signal` aborts.
   */
  read(runId: string, key: string, after: number, signal: AbortSignal): Promise<LogReader | undefined>;
  close(): Promise<void>;
}

/** A stream operation's answer that replays a run's recorded events. */
export interface RunReplay {
  /** The run's agent (for metrics and logs). */
  readonly agent: string;
  /** The position the reader asked to start after (0 for the stream that started the run). */
  readonly after: number;
  readonly entries: LogReader;
}
