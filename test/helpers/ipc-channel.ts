// A worker's IPC channel to a broker of the primary, in this process: messages in both directions
// are delivered on a later turn of the event loop, as over node:cluster's IPC, and `die` closes the
// channel as a worker's exit does (the broker forgets the worker; the worker's side hears the close).
import type { Channel, ToPrimary, ToWorker } from "../../src/coordination/protocol.ts";

/** The primary's side of a broker, as the primary calls it (LockBroker, FairShareBroker). */
export interface BrokerEnds {
  attach(ownerId: number, reply: (message: ToWorker) => void): void;
  detach(ownerId: number): unknown;
  handle(ownerId: number, message: ToPrimary): unknown;
}

/** Workers of `broker`, numbered from 1: each one's channel and its death. */
export function brokeredWorkers(broker: BrokerEnds): () => { readonly channel: Channel<ToWorker, ToPrimary>; die(): void } {
  let nextId = 1;
  return () => {
    const id = nextId++;
    let alive = true;
    const toWorker = new Set<(message: ToWorker) => void>();
    const onClose = new Set<() => void>();
    broker.attach(id, (message) => {
      if (!alive) throw new Error("channel closed");
      setImmediate(() => alive && toWorker.forEach((handler) => handler(message)));
    });
    const channel: Channel<ToWorker, ToPrimary> = {
      send: (message) => {
        if (!alive) throw new Error("channel closed");
        setImmediate(() => broker.handle(id, message));
      },
      onMessage: (handler) => toWorker.add(handler),
      onClose: (handler) => onClose.add(handler),
    };
    return {
      channel,
      die: () => {
        alive = false;
        broker.detach(id);
        onClose.forEach((handler) => handler());
      },
    };
  };
}
