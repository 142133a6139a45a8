import { sendToWorker, type ReplyToWorker, type ToPrimary } from "../protocol.ts";

/** How long the primary waits for its workers' answers to a cancel before answering with what it has. */
const ANSWER_WAIT_MS = 1_000;

interface Broadcast {
  readonly asker: ReplyToWorker;
  readonly askerId: number;
  /** Workers that have not answered yet. */
  readonly waiting: Set<number>;
  readonly timer: NodeJS.Timeout;
}

/**
 * The primary's side of a cancel across the workers of one host: the worker that was asked passes
 * the conversation's key here, every worker is told to stop the run holding it, and the first run id
 * reported (or null once all have answered, or after ANSWER_WAIT_MS) goes back to the asker. At most
 * one run holds a conversation, so at most one worker reports one.
 */
export class CancelBroker {
  private readonly workers = new Map<number, ReplyToWorker>();
  private readonly broadcasts = new Map<number, Broadcast>();
  private nextId = 1;

  attach(workerId: number, reply: ReplyToWorker): void {
    this.workers.set(workerId, reply);
  }

  /** A worker that goes away answers nothing: its runs ended with it. */
  detach(workerId: number): void {
    this.workers.delete(workerId);
    for (const [id, broadcast] of this.broadcasts) {
      if (broadcast.waiting.delete(workerId) && broadcast.waiting.size === 0) this.finish(id, null);
    }
  }

  /** Handle one worker message; returns false when it was not a cancel message. */
  handle(workerId: number, message: ToPrimary): boolean {
    switch (message.ah) {
      case "run.cancel":
        this.broadcast(workerId, message.id, message.key);
        return true;
      case "run.stopped": {
        const broadcast = this.broadcasts.get(message.id);
        if (!broadcast) return true;
        broadcast.waiting.delete(workerId);
        if (message.runId !== null) this.finish(message.id, message.runId);
        else if (broadcast.waiting.size === 0) this.finish(message.id, null);
        return true;
      }
      default:
        return false;
    }
  }

  private broadcast(askerWorker: number, askerId: number, key: string): void {
    const asker = this.workers.get(askerWorker);
    if (!asker) return;
    const id = this.nextId++;
    const waiting = new Set(this.workers.keys());
    const timer = setTimeout(() => this.finish(id, null), ANSWER_WAIT_MS);
    this.broadcasts.set(id, { asker, askerId, waiting, timer });
    for (const [workerId, reply] of this.workers) {
      if (!sendToWorker(reply, { ah: "run.stop", id, key })) waiting.delete(workerId);
    }
    if (waiting.size === 0) this.finish(id, null);
  }

  private finish(id: number, runId: string | null): void {
    const broadcast = this.broadcasts.get(id);
    if (!broadcast) return;
    this.broadcasts.delete(id);
    clearTimeout(broadcast.timer);
    sendToWorker(broadcast.asker, { ah: "run.cancelled", id: broadcast.askerId, runId });
  }
}
