import { isLast, type RunEventWriter } from "./event-log.ts";
import { MemoryEventLog, type MemoryEventLogOptions } from "./memory-event-log.ts";
import { sendToWorker, type ReplyToWorker, type ToPrimary } from "../protocol.ts";

interface Member {
  readonly reply: ReplyToWorker;
  /** Runs this worker records, by run id. */
  readonly writers: Map<string, RunEventWriter>;
  /** Reads this worker asked for, by its request id. */
  readonly reads: Map<number, AbortController>;
}

/**
 * The primary's record of its workers' resumable runs (without Redis): workers send each event here
 * as their runs make it, and a worker resuming a stream reads the record back, live to the end,
 * whichever worker runs the run. A worker that dies ends its runs' records with an error event.
 */
export class EventLogBroker {
  private readonly log: MemoryEventLog;
  private readonly members = new Map<number, Member>();

  constructor(limits: MemoryEventLogOptions) {
    this.log = new MemoryEventLog(limits);
  }

  attach(workerId: number, reply: ReplyToWorker): void {
    this.members.set(workerId, { reply, writers: new Map(), reads: new Map() });
  }

  detach(workerId: number): void {
    const member = this.members.get(workerId);
    if (!member) return;
    this.members.delete(workerId);
    for (const read of member.reads.values()) read.abort();
    for (const writer of member.writers.values()) {
      writer.append({ type: "error", content: "The worker running this run stopped.", error_code: "run_failed" });
      writer.end(false);
    }
  }

  /** Handle one worker message; returns false when it was not an event-log message. */
  handle(workerId: number, message: ToPrimary): boolean {
    const member = this.members.get(workerId);
    switch (message.ah) {
      case "events.open":
        member?.writers.set(message.runId, this.log.open(message.runId, message.key, message.user));
        return true;
      case "events.append":
        member?.writers.get(message.runId)?.append(message.event);
        return true;
      case "events.end":
        member?.writers.get(message.runId)?.end(message.clean);
        member?.writers.delete(message.runId);
        return true;
      case "events.read":
        if (member) void this.read(member, message);
        return true;
      case "events.stop":
        member?.reads.get(message.id)?.abort();
        return true;
      default:
        return false;
    }
  }

  private async read(member: Member, request: Extract<ToPrimary, { ah: "events.read" }>): Promise<void> {
    const { id } = request;
    const stop = new AbortController();
    member.reads.set(id, stop);
    try {
      const entries = await this.log.read(request.runId, request.key, request.after, stop.signal);
      sendToWorker(member.reply, { ah: "events.found", id, found: entries !== undefined });
      if (!entries) return;
      let ended = false;
      for await (const entry of entries) {
        if (stop.signal.aborted) return;
        sendToWorker(member.reply, { ah: "events.entry", id, entry });
        ended = isLast(entry);
      }
      if (!ended && !stop.signal.aborted) sendToWorker(member.reply, { ah: "events.closed", id });
    } finally {
      member.reads.delete(id);
    }
  }

  async close(): Promise<void> {
    await this.log.close();
  }
}
