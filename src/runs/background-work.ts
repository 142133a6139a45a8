/** The worker's executor of background runs, as the worker's life sees it: started by the app, drained with the worker. */
export interface BackgroundWork {
  /** Take no more runs; the ones executing go on. */
  stopClaiming(): void;
  /** Stop the runs still executing and hand them back to their queue, to continue elsewhere. */
  handBack(): Promise<void>;
}

/**
 * Where the app puts the worker's background executor once it has built it, so the worker's
 * drain and close reach it (the executor is built from the app's services; the runtime is built
 * before them).
 */
export class BackgroundSlot implements BackgroundWork {
  private work: BackgroundWork | undefined;

  attach(work: BackgroundWork): void {
    this.work = work;
  }

  stopClaiming(): void {
    this.work?.stopClaiming();
  }

  async handBack(): Promise<void> {
    await this.work?.handBack();
  }
}
