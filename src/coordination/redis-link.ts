import type { Redis } from "ioredis";
import { connectRedis, throttledReport } from "./locks/redis-connection.ts";

/** One channel's subscription on the link: resolved once Redis has confirmed it. */
export interface Subscription {
  readonly ready: Promise<void>;
  unsubscribe(): void;
}

/**
 * A process's two connections to the coordination Redis, shared by everything that coordinates
 * through it (the conversation lock, cancels): one for commands, which fails fast while Redis is
 * unreachable (no offline queue, a 2 s command timeout) so a request answers 503 rather than hangs,
 * and one in subscriber mode carrying every channel the process listens to. Both reconnect forever;
 * their problems go to `onError`, at most one per ten seconds for the two.
 */
export class RedisLink {
  readonly commands: Redis;
  private readonly subscriber: Redis;
  private readonly channels = new Map<string, { readonly handlers: Set<(message: string) => void>; readonly ready: Promise<void> }>();
  /** Users that report the link's connection problems in their own words too (each throttles its own). */
  private readonly watchers = new Set<(error: Error) => void>();

  constructor(url: string, onError?: (error: Error) => void) {
    const report = throttledReport(onError);
    const problem = (error: Error) => {
      report(error);
      for (const watcher of this.watchers) watcher(error);
    };
    this.commands = connectRedis(url, problem, { enableOfflineQueue: false, commandTimeout: 2_000 });
    this.subscriber = connectRedis(url, problem);
    this.subscriber.on("message", (channel: string, message: string) => {
      for (const handler of this.channels.get(channel)?.handlers ?? []) handler(message);
    });
  }

  /** Call `handler` with each message published on `channel` until unsubscribed. */
  subscribe(channel: string, handler: (message: string) => void): Subscription {
    let entry = this.channels.get(channel);
    if (!entry) {
      // A failed SUBSCRIBE is retried by ioredis when it reconnects; the waiters also poll.
      entry = { handlers: new Set(), ready: this.subscriber.subscribe(channel).then(() => {}, () => {}) };
      this.channels.set(channel, entry);
    }
    const { handlers, ready } = entry;
    handlers.add(handler);
    return {
      ready,
      unsubscribe: () => {
        if (!handlers.delete(handler) || handlers.size > 0 || this.channels.get(channel)?.handlers !== handlers) return;
        this.channels.delete(channel);
        this.subscriber.unsubscribe(channel).catch(() => {});
      },
    };
  }

  /** Also give the link's connection problems to `report` until the returned function is called. */
  watchProblems(report: (error: Error) => void): () => void {
    this.watchers.add(report);
    return () => void this.watchers.delete(report);
  }

  close(): void {
    this.channels.clear();
    this.watchers.clear();
    this.commands.disconnect();
    this.subscriber.disconnect();
  }
}

/** Where a Redis user gets its connections: a link the process shares, or a URL for a link of its own (tests, benches). */
export type RedisSource = { readonly link: RedisLink } | { readonly url: string; readonly onError?: (error: Error) => void };

/** The link to use, and whether its user owns it (and so closes it). */
export function openLink(source: RedisSource): { readonly link: RedisLink; readonly owned: boolean } {
  return "link" in source ? { link: source.link, owned: false } : { link: new RedisLink(source.url, source.onError), owned: true };
}
