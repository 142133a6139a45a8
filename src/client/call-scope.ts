import { AgentClientError } from "./errors.ts";

/**
 * The life of one call: one AbortController handed to fetch, linked to the caller's signal, and one
 * timer at a time (the call's deadline, or the stream's idle limit). Whatever fails inside the call
 * goes through `translate`, which says why it really stopped.
 */
export class CallScope {
  private readonly controller = new AbortController();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private expired: AgentClientError | undefined;
  private readonly onCallerAbort = () => this.controller.abort(this.callerSignal?.reason);

  constructor(private readonly callerSignal: AbortSignal | undefined) {
    if (callerSignal?.aborted) this.controller.abort(callerSignal.reason);
    else callerSignal?.addEventListener("abort", this.onCallerAbort, { once: true });
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Start (or restart) the single timer; 0, negative or non-finite means no limit. */
  arm(ms: number, describe: () => string): void {
    this.disarm();
    if (!Number.isFinite(ms) || ms <= 0) return;
    this.timer = setTimeout(() => {
      this.expired = new AgentClientError(describe(), { kind: "timeout" });
      this.controller.abort(this.expired);
    }, ms);
  }

  disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Throw the caller's abort reason if the caller already cancelled. */
  throwIfCancelled(): void {
    if (this.callerSignal?.aborted) throw abortReason(this.callerSignal);
  }

  /**
   * The error to surface for `error`: the caller's own abort reason when they cancelled, the timeout
   * when a timer fired, an AgentClientError unchanged, anything else as a network failure.
   */
  translate(error: unknown): unknown {
    if (this.callerSignal?.aborted) return abortReason(this.callerSignal);
    if (this.expired) return this.expired;
    if (error instanceof AgentClientError) return error;
    const reason = error instanceof Error ? error.message : String(error);
    const cause = error instanceof Error && error.cause instanceof Error ? ` (${error.cause.message})` : "";
    return new AgentClientError(`request to agenthost failed: ${reason}${cause}`, { kind: "network", cause: error });
  }

  dispose(): void {
    this.disarm();
    this.callerSignal?.removeEventListener("abort", this.onCallerAbort);
  }
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("The operation was aborted.", "AbortError");
}

/** Settle with `promise`, or reject with the signal's reason as soon as it aborts. */
export function raceSignal<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortReason(signal));
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}
