import type { Redis } from "ioredis";
import { connectRedis, throttledReport } from "./redis-connection.ts";
import type { LeaseEvent } from "./redis-lease.ts";
import { lockKey, lockScripts, releaseChannel, type LockScripts } from "./redis-lock-scripts.ts";

export interface LeaseReaperOptions {
  readonly url: string;
  /** REDIS_KEY_PREFIX, as the workers' RedisConversationLock uses it. */
  readonly keyPrefix: string;
  /** Connection problems, at most one call per ten seconds. */
  readonly onError?: (error: Error) => void;
}

/**
 * The supervisor's side of RedisConversationLock's `onLease`: it keeps the leases each worker
 * reports and, when a worker dies, deletes those still holding that worker's token and announces
 * them on the release channel, so its conversations are free at once instead of after the lease
 * time. A lease that expired and was taken by anyone else since holds another token and is left
 * alone: only the dead worker's own leases are ever deleted.
 */
export class LeaseReaper {
  private readonly client: Redis;
  private readonly scripts: LockScripts;
  /** Leases each worker reported held: owner → conversation key → token. */
  private readonly held = new Map<number, Map<string, string>>();

  constructor(private readonly options: LeaseReaperOptions) {
    this.client = connectRedis(options.url, throttledReport(options.onError));
    this.scripts = lockScripts(this.client);
  }

  /** A worker's lease report. */
  record(owner: number, event: LeaseEvent): void {
    let leases = this.held.get(owner);
    if (event.kind === "held") {
      if (!leases) this.held.set(owner, (leases = new Map()));
      leases.set(event.key, event.token);
    } else if (leases?.get(event.key) === event.token) {
      leases.delete(event.key);
    }
  }

  /** The worker is gone: release the leases it still held. Resolves with how many were released. */
  async reap(owner: number): Promise<number> {
    const leases = this.held.get(owner);
    this.held.delete(owner);
    if (!leases?.size) return 0;
    const { keyPrefix } = this.options;
    const released = await Promise.all(
      [...leases].map(async ([key, token]) => {
        if (!(await this.scripts.drop(lockKey(keyPrefix, key), token).catch(() => false))) return false;
        await this.client.publish(releaseChannel(keyPrefix), key).catch(() => {});
        return true;
      }),
    );
    return released.filter(Boolean).length;
  }

  close(): void {
    this.client.disconnect();
  }
}
