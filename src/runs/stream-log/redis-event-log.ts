import type { Redis } from "ioredis";
import { connectRedis, throttledReport } from "../../admission/locks/redis-connection.ts";
import type { StreamEvent } from "../../contract/messages.ts";
import type { EventLog, LogEntry, LogReader, RunEventWriter } from "./event-log.ts";

/** How long one blocking read waits before looking whether the run's events expired. */
const BLOCK_MS = 1_000;
const BATCH = 200;

export interface RedisEventLogOptions {
  readonly url: string;
  /** REDIS_KEY_PREFIX with its separator. */
  readonly keyPrefix: string;
  /** STREAM_RESUME_TTL: how long the events stay after the run ended. */
  readonly ttlMs: number;
  /** The longest a run's events may stay if its end never comes (its host died). */
  readonly maxAgeMs: number;
  readonly onError?: (error: Error) => void;
}

/**
 * Resumable runs' events in Redis Streams, readable from every worker of every host: one stream per
 * run (`<prefix>run-events:<run id>`) whose entry ids are `0-<seq>`, so reading after a sequence number
 * is reading after an id; the owning conversation's key is kept beside it (`<prefix>run-owner:<run id>`).
 * Both expire `maxAgeMs` after the run began, and STREAM_RESUME_TTL after it ended.
 */
export class RedisEventLog implements EventLog {
  private readonly client: Redis;
  private readonly readers = new Set<Redis>();
  private readonly report: (error: Error) => void;

  constructor(private readonly options: RedisEventLogOptions) {
    this.report = throttledReport(options.onError);
    this.client = connectRedis(options.url, this.report, { enableOfflineQueue: false, commandTimeout: 2_000 });
  }

  private eventsKey(runId: string): string {
    return `${this.options.keyPrefix}run-events:${runId}`;
  }

  private ownerKey(runId: string): string {
    return `${this.options.keyPrefix}run-owner:${runId}`;
  }

  open(runId: string, key: string): RunEventWriter {
    const events = this.eventsKey(runId);
    const owner = this.ownerKey(runId);
    const { ttlMs, maxAgeMs } = this.options;
    let seq = 0;
    const failed = (error: Error) => this.report(error);
    this.client.set(owner, key, "PX", maxAgeMs).catch(failed);
    const add = (entry: LogEntry, expireMs: number) => {
      // Commands on one connection run in order, so the entries land in sequence.
      this.client.multi().xadd(events, `0-${entry.seq}`, "e", JSON.stringify(entry)).pexpire(events, expireMs).exec().catch(failed);
    };
    return {
      append: (event: StreamEvent) => add({ seq: ++seq, event }, maxAgeMs),
      end: (clean: boolean) => {
        add({ seq: ++seq, end: true, clean }, ttlMs);
        this.client.pexpire(owner, ttlMs).catch(failed);
      },
    };
  }

  async read(runId: string, key: string, after: number, signal: AbortSignal): Promise<LogReader | undefined> {
    const owner = await this.client.get(this.ownerKey(runId));
    if (owner !== key) return undefined;
    return this.follow(runId, after, signal);
  }

  /** Read the run's stream after `after` on a connection of its own (a blocking read holds its connection). */
  private async *follow(runId: string, after: number, signal: AbortSignal): AsyncGenerator<LogEntry> {
    const connection = this.client.duplicate({ enableOfflineQueue: true, commandTimeout: undefined });
    connection.on("error", this.report);
    this.readers.add(connection);
    const stop = () => connection.disconnect();
    signal.addEventListener("abort", stop, { once: true });
    const events = this.eventsKey(runId);
    let last = after;
    try {
      for (;;) {
        if (signal.aborted) return;
        const answer = (await connection.xread("COUNT", BATCH, "BLOCK", BLOCK_MS, "STREAMS", events, `0-${last}`)) as
          | Array<[string, Array<[string, string[]]>]>
          | null;
        if (!answer) {
          // Nothing new within BLOCK_MS: stop if the run's events are gone.
          if (!(await connection.exists(this.ownerKey(runId)))) return;
          continue;
        }
        for (const [, entries] of answer) {
          for (const [, fields] of entries) {
            const entry = JSON.parse(fields[1]!) as LogEntry;
            last = entry.seq;
            yield entry;
            if ("end" in entry) return;
          }
        }
      }
    } catch (error) {
      if (!signal.aborted) throw error;
    } finally {
      signal.removeEventListener("abort", stop);
      this.readers.delete(connection);
      connection.disconnect();
    }
  }

  async close(): Promise<void> {
    for (const connection of this.readers) connection.disconnect();
    this.client.disconnect();
  }
}
