/**
 * Feedback proofs the page received with its runs, kept in this process by run id so the browser never
 * holds one. Bounded: the oldest proofs are forgotten first (feedback on a very old answer then goes
 * without a proof, which the service accepts from the shared secret in trusted mode).
 */
export class FeedbackTokens {
  private readonly byRun = new Map<string, { agent: string; token: string }>();

  constructor(private readonly capacity = 1000) {}

  remember(agent: string, runId: string, token: string): void {
    this.byRun.delete(runId);
    this.byRun.set(runId, { agent, token });
    while (this.byRun.size > this.capacity) {
      const oldest = this.byRun.keys().next().value;
      if (oldest === undefined) break;
      this.byRun.delete(oldest);
    }
  }

  /** The proof for this run, if the page received one from this agent. */
  lookup(agent: string, runId: string): string | undefined {
    const entry = this.byRun.get(runId);
    return entry?.agent === agent ? entry.token : undefined;
  }

  get size(): number {
    return this.byRun.size;
  }
}
