/** Backoff of the first restarts in a window: 0, then 250 ms doubling, at most 10 s. */
const BASE_DELAY_MS = 250;
const MAX_DELAY_MS = 10_000;

/**
 * Worker restarts in a sliding window. Each restart gets a backoff that grows with the restarts
 * already in the window; more than `limit` restarts in the window is a crash loop.
 */
export class RestartBudget {
  private readonly times: number[] = [];

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Record a restart: the delay before forking its replacement, or undefined on a crash loop. */
  record(): number | undefined {
    const now = this.now();
    this.times.push(now);
    while (this.times.length > 0 && now - this.times[0]! > this.windowMs) this.times.shift();
    const count = this.times.length;
    if (count > this.limit) return undefined;
    return count <= 1 ? 0 : Math.min(BASE_DELAY_MS * 2 ** (count - 2), MAX_DELAY_MS);
  }
}
