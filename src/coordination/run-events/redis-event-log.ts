import type { Redis } from "ioredis";
import { throttledReport } from "../locks/redis-connection.ts";
import { openLink, type RedisLink, type RedisSource } from "../redis-link.ts";
import { DROPPED, isLast, type EventLog, type LogEntry, type LogReader, type RunEventWriter, type RecordedEvent } from "./event-log.ts";
import { entryBytes, RecordBudget, type RecordBounds } from "./record-budget.ts";

/** How long one blocking read waits before looking whether the run ended or its events expired. */
const BLOCK_MS = 1_000;
const BATCH = 200;
/** The id of a dropped record's one entry: after every `0-<seq>`, so every reader gets it next. */
const DROPPED_ID = "1-0";
const DROPPED_JSON = JSON.stringify(DROPPED);
/** The note a writer publishes when it starts a run's record (over). */
const RESET = "reset";

export type RedisEventLogOptions = RedisSource & RecordBounds & {
  /** REDIS_KEY_PREFIX with its separator. */
  readonly keyPrefix: string;
  /** STREAM_RESUME_TTL: how long the events stay after the run ended. */
  readonly ttlMs: number;
  /** The longest a run's events may stay if its end never comes (its host died). */
  readonly maxAgeMs: number;
  /** Writes and reads that failed, at most one call per ten seconds (and, given a URL, its connection problems). */
  readonly onError?: (error: Error) => void;
};

/**
 * Resumable runs' events in Redis Streams, readable from every worker of every host: one stream per
 * run (`<prefix>run-events:<run id>`) whose entry ids are `0-<seq>`, so reading after a sequence number
 * is reading after an id; the owning conversation's key is kept beside it (`<prefix>run-owner:<run id>`).
 * Both expire `maxAgeMs` after the run began, and STREAM_RESUME_TTL after it ended.
 *
 * Each process bounds the bytes it has written that Redis still keeps (RecordBudget, counted here as
 * the runs are written and until their keys expire): a run whose record is dropped has its stream
 * replaced by one DROPPED entry (id `1-0`), and nothing more is written for it.
 */
export class RedisEventLog implements EventLog {
  private readonly link: RedisLink;
  /** Whether the link is this log's own (given a URL), closed with it. */
  private readonly ownsLink: boolean;
  private readonly client: Redis;
  private readonly unwatch: () => void;
  private readonly report: (error: Error) => void;
  private readonly budget: RecordBudget;
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(private readonly options: RedisEventLogOptions) {
    this.report = throttledReport(options.onError);
    ({ link: this.link, owned: this.ownsLink } = openLink(options));
    this.client = this.link.commands;
    // The record's own log line for a connection problem, as for a failed write.
    this.unwatch = this.ownsLink ? () => {} : this.link.watchProblems(this.report);
    this.budget = new RecordBudget(options);
  }

  /** The bytes this process has written that are still kept (tests and diagnostics). */
  get bytes(): number {
    return this.budget.bytes;
  }

  private eventsKey(runId: string): string {
    return `${this.options.keyPrefix}run-events:${runId}`;
  }

  private ownerKey(runId: string): string {
    return `${this.options.keyPrefix}run-owner:${runId}`;
  }

  /** The channel a writer notes each addition on, so readers need not block a connection waiting. */
  private addedChannel(runId: string): string {
    return `${this.options.keyPrefix}run-events-added:${runId}`;
  }

  /** Run `release` once in `ms` (when Redis forgets what it counts), unless close comes first. */
  private later(ms: number, release: () => void): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      release();
    }, ms);
    timer.unref();
    this.timers.add(timer);
    return timer;
  }

  open(runId: string, key: string, user: string): RunEventWriter {
    const events = this.eventsKey(runId);
    const owner = this.ownerKey(runId);
    const added = this.addedChannel(runId);
    const { ttlMs, maxAgeMs } = this.options;
    let seq = 0;
    let ended = false;
    const failed = (error: Error) => this.report(error);
    const budget = this.budget.open(user, () => {
      // Commands on one connection run in order: appends already sent land first, then go.
      this.client
        .multi()
        .del(events)
        .xadd(events, DROPPED_ID, "e", DROPPED_JSON)
        .pexpire(events, ended ? ttlMs : maxAgeMs)
        .publish(added, "")
        .exec()
        .catch(failed);
    });
    let release = this.later(maxAgeMs, () => this.budget.release(budget));
    // A run opened again (a background run's next attempt) starts its record over: readers of the
    // old one stop when they get the note.
    this.client.multi().del(events).set(owner, key, "PX", maxAgeMs).publish(added, RESET).exec().catch(failed);
    const add = (entry: LogEntry & { seq: number }, expireMs: number) => {
      const json = JSON.stringify(entry);
      if (!this.budget.charge(budget, entryBytes(json.length))) return;
      this.client.multi().xadd(events, `0-${entry.seq}`, "e", json).pexpire(events, expireMs).publish(added, "").exec().catch(failed);
    };
    return {
      append: (event: RecordedEvent) => {
        seq++;
        if (!ended && !budget.gone) add({ seq, event }, maxAgeMs);
      },
      end: (clean: boolean) => {
        if (ended) return;
        seq++;
        if (!budget.gone) add({ seq, end: true, clean }, ttlMs);
        ended = true;
        this.budget.ended(budget);
        if (budget.dropped) this.client.pexpire(events, ttlMs).catch(failed);
        this.client.pexpire(owner, ttlMs).catch(failed);
        clearTimeout(release);
        this.timers.delete(release);
        release = this.later(ttlMs, () => this.budget.release(budget));
      },
      // The stream is the new owner's: its open started the record over.
      abandon: () => undefined,
    };
  }

  async read(runId: string, key: string, after: number, signal: AbortSignal): Promise<LogReader | undefined> {
    const owner = await this.client.get(this.ownerKey(runId));
    if (owner !== key) return undefined;
    return this.follow(runId, after, signal);
  }

  /**
   * Read the run's stream after `after`. Reads are plain XRANGEs on the shared command connection (a
   * blocking XREAD would hold a connection of its own for every reader); between them the reader waits
   * for the writer's note on the run's channel that something was added, or BLOCK_MS at most, after
   * which it also looks whether the run ended or its events expired.
   */
  private async *follow(runId: string, after: number, signal: AbortSignal): AsyncGenerator<LogEntry> {
    const events = this.eventsKey(runId);
    let wake: (() => void) | undefined;
    let noted = false;
    let reset = false;
    const subscription = this.link.subscribe(this.addedChannel(runId), (note) => {
      if (note === RESET) reset = true;
      noted = true;
      wake?.();
    });
    const onAbort = () => wake?.();
    signal.addEventListener("abort", onAbort, { once: true });
    /** Until the writer notes an addition, BLOCK_MS pass or the reader stops. */
    const added = () =>
      new Promise<void>((resolve) => {
        if (noted || signal.aborted) return resolve();
        const timer = setTimeout(resolve, BLOCK_MS);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      }).finally(() => {
        wake = undefined;
        noted = false;
      });
    let last = after;
    try {
      // Entries added before the subscription was confirmed are read by the first XRANGE below.
      await subscription.ready;
      for (;;) {
        if (signal.aborted || reset) return;
        noted = false;
        const entries = (await this.client.xrange(events, `(0-${last}`, "+", "COUNT", BATCH)) as Array<[string, string[]]>;
        for (const [, fields] of entries) {
          const entry = JSON.parse(fields[1]!) as LogEntry;
          yield entry;
          if (isLast(entry)) return;
          if ("seq" in entry) last = entry.seq;
        }
        if (entries.length === BATCH) continue;
        if (entries.length === 0) {
          // A reader at or past the run's end gets the end entry again; one whose run's events expired stops.
          const end = await this.endAtOrBefore(events, last);
          if (end) {
            yield end;
            return;
          }
          if (!(await this.client.exists(this.ownerKey(runId)))) return;
        }
        await added();
      }
    } catch (error) {
      if (!signal.aborted) throw error;
    } finally {
      signal.removeEventListener("abort", onAbort);
      subscription.unsubscribe();
    }
  }

  /** The run's end entry when it is the newest and a reader at `position` is at or past it. */
  private async endAtOrBefore(events: string, position: number): Promise<LogEntry | undefined> {
    const [newest] = (await this.client.xrevrange(events, "+", "-", "COUNT", 1)) as Array<[string, string[]]>;
    if (!newest) return undefined;
    const entry = JSON.parse(newest[1][1]!) as LogEntry;
    return "end" in entry && entry.seq <= position ? entry : undefined;
  }

  async close(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.unwatch();
    if (this.ownsLink) this.link.close();
  }
}
