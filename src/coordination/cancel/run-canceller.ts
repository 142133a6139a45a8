import type { ActiveRuns } from "./active-runs.ts";

/**
 * Stops the run holding a conversation wherever it runs: in this process, on another worker of this
 * host (through the primary), or on another host (through Redis). Resolves with the stopped run's id,
 * or undefined when no run held the conversation.
 */
export interface RunCanceller {
  cancel(key: string): Promise<string | undefined>;
  close(): Promise<void>;
}

/** One process: only its own runs exist. */
export class LocalRunCanceller implements RunCanceller {
  constructor(private readonly active: ActiveRuns) {}

  cancel(key: string): Promise<string | undefined> {
    return Promise.resolve(this.active.stop(key));
  }

  async close(): Promise<void> {}
}
