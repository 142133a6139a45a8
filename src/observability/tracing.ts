import type { IncomingMessage } from "node:http";
import type { ModelCallTracer } from "./model-calls.ts";

/**
 * OpenTelemetry traces, as the rest of the service sees them. Off unless an OTLP endpoint is
 * configured; when off there is no Tracing object at all (callers hold `undefined` and skip every
 * step), and the OpenTelemetry SDK is never loaded.
 */
export interface Tracing {
  /** A server span for one HTTP request, its parent taken from the request's `traceparent`. */
  startRequest(req: IncomingMessage): RequestTrace;
  /**
   * A span for one agent run, child of the span active now (the request's); a run with no request
   * (a background run) starts a trace of its own, linked to the span of the request that created it.
   */
  startRun(run: RunIdentity): RunTrace;
  /** The active span as a W3C `traceparent`, to link work done later to it; undefined outside a span. */
  traceparent(): string | undefined;
  /**
   * A span for one conversation-lock acquire, child of the active span; undefined outside a
   * request or run span (nothing to hang it under).
   */
  startLockWait(): LockWaitTrace | undefined;
  /** A span around one checkpoint operation. */
  checkpoint<T>(backend: string, operation: string, call: () => Promise<T>): Promise<T>;
  /** Spans for chat model calls (fed by ModelCallObserver). */
  readonly modelCalls: ModelCallTracer;
  /** The W3C trace context to send to a provider now: the current model call's span, else the active span. */
  outgoing(): { traceparent: string; tracestate?: string } | undefined;
  /** Export what is buffered. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** How one lock acquire ended: granted after a wait, refused for a reason, or failed (the lock service). */
export interface LockWaitTrace {
  granted(waitedMs: number): void;
  /** `aborted` is the caller's own doing and not an error on the span; any other reason is. */
  refused(reason: string): void;
  failed(): void;
}

export interface RequestTrace {
  /** 32 hex digits, for the request's log line. */
  readonly traceId: string;
  /** Run `next` (the rest of the request) with this span as the active one. */
  within(next: () => void): void;
  end(attributes: { route: string; method: string; status: number; errorCode: string | undefined; runId: string | undefined }): void;
}

/** What a run span may say about its run: never the storage key, never message text. */
export interface RunIdentity {
  readonly agent: { readonly name: string };
  readonly runId: string;
  /** The public thread id. */
  readonly threadId: string;
  /** The `traceparent` of the request that created the run, when another request (or none) executes it. */
  readonly createdBy?: string | undefined;
}

export interface RunTrace {
  /** Call `work` with the run's span active; what it starts asynchronously keeps it. */
  within<T>(work: () => T): T;
  /** The same generator, each step run with the run's span active (a stream's graph runs in them). */
  bindEvents<T>(events: AsyncGenerator<T, void, undefined>): AsyncGenerator<T, void, undefined>;
  end(outcome: string): void;
}
