import { sendToWorker, type ReplyToWorker, type ToPrimary } from "../protocol.ts";
import { FairShareTable } from "./memory-counters.ts";

/**
 * The primary's side of the fair share without Redis: one FairShareTable for every worker of this
 * host, asked over the IPC channel the primary already keeps with each worker (one request and
 * reply per run admitted, no extra connection, and no listener of its own on node:cluster, which
 * rate-limiter-flexible's cluster limiter would add). A run slot belongs to the worker that took
 * it: when that worker exits, its slots are dropped at once. The table is made on the first
 * message, so a primary whose workers have no fair share keeps none.
 */
export class FairShareBroker {
  private table: FairShareTable | undefined;
  private readonly owners = new Map<number, ReplyToWorker>();

  attach(ownerId: number, reply: ReplyToWorker): void {
    this.owners.set(ownerId, reply);
  }

  /** Forget a worker and drop the run slots it held; returns how many. */
  detach(ownerId: number): number {
    this.owners.delete(ownerId);
    return this.table?.drop(ownerId) ?? 0;
  }

  /** Handle one worker message; false when it is not a fair-share message. */
  handle(ownerId: number, message: ToPrimary): boolean {
    switch (message.ah) {
      case "fair.admit":
        void this.admit(ownerId, message.id, message.ask);
        return true;
      case "fair.release": {
        this.table?.release(message.user, message.slot);
        const reply = this.owners.get(ownerId);
        if (reply) sendToWorker(reply, { ah: "fair.released", id: message.id });
        return true;
      }
      case "fair.charge":
        void this.charge(ownerId, message.id, message.user, message.tokens);
        return true;
      default:
        return false;
    }
  }

  /** The run slots `user` holds across the workers (tests, logs). */
  runsOf(user: string): number {
    return this.table?.runsOf(user) ?? 0;
  }

  private tableNow(): FairShareTable {
    return (this.table ??= new FairShareTable());
  }

  private async charge(ownerId: number, id: number, user: string, tokens: number): Promise<void> {
    if (Number.isSafeInteger(tokens) && tokens > 0) await this.tableNow().charge(user, tokens);
    const reply = this.owners.get(ownerId);
    if (reply) sendToWorker(reply, { ah: "fair.released", id });
  }

  private async admit(ownerId: number, id: number, ask: Extract<ToPrimary, { ah: "fair.admit" }>["ask"]): Promise<void> {
    const verdict = await this.tableNow().admit(ask, ownerId);
    const reply = this.owners.get(ownerId);
    if (reply && sendToWorker(reply, { ah: "fair.verdict", id, verdict })) return;
    // The worker went away while it was asked: its slot goes with it.
    if (verdict.admitted && ask.run) this.table?.release(ask.user, ask.run.id);
  }
}
