import type { Response } from "express";
import type { StreamEvent } from "../contract/messages.ts";
import type { RunEvents } from "../conversations/agent-run.ts";
import { RunFailure } from "../conversations/turns.ts";
import { RunAborted } from "../errors/classify.ts";
import type { Logger } from "../observability/logger.ts";
import type { ServiceMetrics } from "../observability/metrics.ts";
import type { PlatformEvent } from "../platform/run-chunks.ts";
import type { ApiError } from "./api-error.ts";
import { encodeJsonlEvent } from "./encoders/jsonl.ts";
import { encodeSseEvent, SSE_DONE, SSE_KEEPALIVE } from "./encoders/sse.ts";
import { toApiError } from "./error-answer.ts";
import { runOf, scopeOf } from "./request-scope.ts";

/** How a stream's events go on the wire, and the event that reports a failure after the headers. */
export interface Framing<E> {
  readonly contentType: string;
  encode(event: E): string;
  /** Written once, only after a clean end. */
  readonly done?: string;
  readonly keepalive?: string;
  /** The event that ends a failed stream, from the catalogue's entry and its text. */
  errorEvent(error: ApiError, text: string): E;
}

/** agenthost's own error event: the catalogue's text and code. */
function streamErrorEvent(error: ApiError, text: string): StreamEvent {
  const event: StreamEvent = { type: "error", content: text };
  if (error.errorCode) event.error_code = error.errorCode;
  return event;
}

/**
 * The LangGraph Platform API's Server-Sent Events: `event: <name>`, `data: <JSON>` and the event's
 * `id:` per event, an `error` event (`{error, message}`) after a failure, no completion marker.
 */
export const PLATFORM_SSE: Framing<PlatformEvent> = {
  contentType: "text/event-stream; charset=utf-8",
  encode: (event) => `event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n${event.id === undefined ? "" : `id: ${event.id}\n`}\n`,
  keepalive: SSE_KEEPALIVE,
  errorEvent: (error, text) => ({ event: "error", data: { error: error.errorCode ?? "error", message: text } }),
};

export const FRAMINGS: Readonly<Record<"sse" | "jsonl", Framing<StreamEvent>>> = {
  sse: { contentType: "text/event-stream; charset=utf-8", encode: encodeSseEvent, done: SSE_DONE, keepalive: SSE_KEEPALIVE, errorEvent: streamErrorEvent },
  jsonl: { contentType: "application/jsonl; charset=utf-8", encode: encodeJsonlEvent, errorEvent: streamErrorEvent },
};

export interface StreamSettings {
  /** STREAM_MAX_UNSENT_BYTES: a client that leaves more unread is cut. */
  readonly maxUnsentBytes: number;
  /** STREAM_KEEPALIVE_INTERVAL, in seconds. */
  readonly keepaliveSeconds: number;
  /** Development mode names a failed run's exception in its error event. */
  readonly development: boolean;
  readonly metrics: ServiceMetrics;
}

/**
 * A stream's output, written without waiting for the client: a client that stops reading never
 * stalls the run, so the deadline and the conversation lock keep working, and the run's events are
 * taken as they come instead of piling up inside the graph's stream. What the client has not taken
 * yet waits in the response's buffers (`writableLength`, the socket's included); a client that lets
 * more than `maxUnsent` bytes pile up is a slow consumer, and its connection is cut. The check comes
 * before each write, so one event larger than the cap still goes out whole.
 */
export class StreamOutput {
  /** Set when this output cut its client. */
  slowConsumer = false;

  constructor(
    private readonly res: Response,
    private readonly maxUnsent: number,
  ) {}

  /** Queue `chunk` for the client; false when the connection is gone or has just been cut. */
  send(chunk: string): boolean {
    const { res } = this;
    if (res.destroyed || res.writableEnded) return false;
    if (res.writableLength > this.maxUnsent) {
      this.slowConsumer = true;
      res.destroy();
      return false;
    }
    res.write(chunk);
    return true;
  }

  /** Output the client has not taken yet. */
  get unsent(): number {
    return this.res.destroyed ? 0 : this.res.writableLength;
  }
}

/**
 * The error event's text: the catalogue's fixed description; in development, a generic run
 * failure also names the exception so an agent author can see what broke.
 */
function describeForStream(development: boolean, error: ApiError, cause: unknown): string {
  if (development && error.errorCode === "run_failed" && cause instanceof Error) {
    return `${error.detail} (${cause.name}: ${cause.message.split("\n")[0]})`;
  }
  return error.detail;
}

function isDeadline(reason: unknown): boolean {
  return reason instanceof RunAborted && reason.reason === "deadline";
}

/**
 * The events that end a failed stream (a message still held back, then the error). A failure of the
 * run has been logged by the run; anything else thrown is a bug, logged here.
 */
export function failureEvents<E>(thrown: unknown, logger: Logger, development: boolean, framing: Framing<E>): { events: E[]; error: ApiError } {
  const failure = thrown instanceof RunFailure ? thrown : undefined;
  const error = toApiError(failure ? failure.error : thrown);
  if (!failure) logger.error({ err: thrown }, "stream failed");
  const event = framing.errorEvent(error, describeForStream(development, error, failure ? failure.cause : thrown));
  // The run's own last event, held back when it failed, is one of this stream's.
  return { events: failure?.undelivered !== undefined ? [failure.undelivered as E, event] : [event], error };
}

/**
 * Write a run's events in `framing`: the headers, each event as it comes, `[DONE]` (SSE) only after a
 * clean end, an error event after a failure; keepalive comments while the run is silent. A stream
 * that stops early ends its run with what it saw (client_disconnected, slow_consumer); the run itself
 * reports its clean end or its failure.
 */
export async function writeEventStream<E>(res: Response, stream: RunEvents<E>, frames: Framing<E>, settings: StreamSettings): Promise<void> {
  const { metrics } = settings;
  res.status(200).set({
    "Content-Type": frames.contentType,
    "Cache-Control": "no-cache, no-transform",
    "X-Accel-Buffering": "no",
  });
  res.flushHeaders();
  const output = new StreamOutput(res, settings.maxUnsentBytes);
  const keepalive = frames.keepalive
    ? setInterval(() => output.send(frames.keepalive!), settings.keepaliveSeconds * 1000)
    : undefined;
  /** Write one event; false when the client is gone. */
  const emit = (event: E): boolean => output.send(frames.encode(event));
  let outcome = "client_disconnected";
  try {
    for await (const event of stream.events) {
      if (!emit(event)) return;
      keepalive?.refresh();
    }
    outcome = "ok";
    if (frames.done) output.send(frames.done);
  } catch (thrown) {
    const { events, error } = failureEvents(thrown, scopeOf(res).logger, settings.development, frames);
    outcome = error.errorCode ?? "error";
    scopeOf(res).errorCode = error.errorCode;
    for (const event of events) emit(event);
  } finally {
    clearInterval(keepalive);
    // A run that finished cleanly counts as ok even if its client left before the final message.
    if (outcome === "client_disconnected" && stream.finished) outcome = "ok";
    if (output.slowConsumer) {
      outcome = "slow_consumer";
      metrics.streamCuts.inc({ reason: "slow_consumer" });
    }
    stream.end(outcome);
    res.end();
    if (output.unsent > 0 && isDeadline(runOf(res).signal.reason)) {
      // The deadline ends the stream now, not when a client that stopped reading takes the rest:
      // destroying the connection closes the response, which releases the admission slot.
      res.destroy();
      metrics.streamCuts.inc({ reason: "deadline" });
    }
  }
}
