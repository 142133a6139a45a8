import type { Channel } from "./protocol.ts";

/** The channel closed before the reply came (the primary is gone), or was closed when the request was made. */
export class ChannelClosed extends Error {
  constructor() {
    super("the primary is gone");
    this.name = "ChannelClosed";
  }
}

/** No reply within the request's time. */
export class ReplyTimeout extends Error {
  constructor() {
    super("the primary did not answer");
    this.name = "ReplyTimeout";
  }
}

export interface RequestOptions {
  /** How long to wait for the reply. */
  readonly timeoutMs: number;
  /** Gives up the wait, rejecting with the signal's reason. */
  readonly signal?: AbortSignal;
  /** Called with the request's id when it is given up (timeout, abort), before the rejection: tell the other side. */
  readonly abandon?: (id: number) => void;
  /** Wait under this id, not a new one: a follow-up whose reply names an earlier request's id (a lock's release names its acquire). */
  readonly id?: number;
}

interface Pending<In> {
  resolve(reply: In): void;
  reject(error: unknown): void;
}

/**
 * Requests over a message channel, each answered by one reply naming its id. A request resolves
 * with its reply, and rejects when its time runs out (ReplyTimeout), its signal aborts (the
 * signal's reason) or the channel closes or is closed (ChannelClosed). A reply that comes after its
 * request was given up goes to `late`. The primary-brokered lock and the primary canceller ask
 * through it; the run-event reads of PrimaryEventLog, which stream entries after their first
 * answer, still keep their own table.
 */
export class ChannelRequests<In extends { ah: string }, Out extends { ah: string }> {
  private nextId = 1;
  private readonly pending = new Map<number, Pending<In>>();
  private closedNow = false;

  constructor(
    private readonly channel: Channel<In, Out>,
    /** The id of the request `message` answers, or undefined when it answers none of this user's. */
    private readonly replyTo: (message: In) => number | undefined,
    private readonly late?: (reply: In) => void,
  ) {
    channel.onMessage((message) => {
      const id = this.replyTo(message);
      if (id === undefined) return;
      const pending = this.pending.get(id);
      if (pending) pending.resolve(message);
      else this.late?.(message);
    });
    channel.onClose(() => {
      this.closedNow = true;
      const waiting = [...this.pending.values()];
      this.pending.clear();
      for (const { reject } of waiting) reject(new ChannelClosed());
    });
  }

  /** Whether the other side has gone away. */
  /** Requests sent and not answered yet. */
  get pendingCount(): number {
    return this.pending.size;
  }

  get closed(): boolean {
    return this.closedNow;
  }

  /** Send `make(id)` and wait for the reply to `id`. */
  request(make: (id: number) => Out, options: RequestOptions): Promise<In> {
    if (this.closedNow) return Promise.reject(new ChannelClosed());
    const { signal, timeoutMs, abandon } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    const id = options.id ?? this.nextId++;
    return new Promise<In>((resolve, reject) => {
      const settle = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        this.pending.delete(id);
      };
      const giveUp = (error: unknown) => {
        settle();
        abandon?.(id);
        reject(error);
      };
      const onAbort = () => giveUp(signal?.reason);
      const timer = setTimeout(() => giveUp(new ReplyTimeout()), timeoutMs);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.pending.set(id, {
        resolve: (reply) => {
          settle();
          resolve(reply);
        },
        reject: (error) => {
          settle();
          reject(error);
        },
      });
      try {
        this.channel.send(make(id));
      } catch {
        settle();
        reject(new ChannelClosed());
      }
    });
  }

  /** Send a message that has no reply; false when the channel has closed. */
  send(message: Out): boolean {
    try {
      this.channel.send(message);
      return true;
    } catch {
      return false;
    }
  }
}
