import type { Response } from "express";
import type { StreamEvent } from "../contract/messages.ts";
import type { RunEvents } from "../conversations/agent-run.ts";
import { EntryQueue } from "../coordination/run-events/entry-queue.ts";
import type { LogEntry, RunEventWriter, RunReplay } from "../coordination/run-events/event-log.ts";
import type { StreamLogs } from "../coordination/run-events/stream-logs.ts";
import { errorCatalogue } from "./api-error.ts";
import { failureEvents, FRAMINGS, StreamOutput, type StreamSettings } from "./event-stream.ts";
import { scopeOf, type RequestScope } from "./request-scope.ts";

/**
 * Resumable streams (`stream_resumable: true`). The run's events are recorded (coordination/run-events) by a
 * pump that goes on when the client leaves, within the request's deadline; the response gets them from
 * the pump as they come, and any later resume (GET /runs/{run_id}/stream) reads the record. Each event
 * carries its sequence number: SSE as `id:`, JSON Lines as `seq`.
 */

type Numbered = Extract<LogEntry, { event: unknown }>;
const encodeSse = (entry: Numbered) => `id: ${entry.seq}\ndata: ${JSON.stringify(entry.event)}\n\n`;
const encodeJsonl = (entry: Numbered) => `${JSON.stringify({ ...entry.event, seq: entry.seq })}\n`;

/** What a resume gets in place of events its run's record no longer keeps (it passed a size bound). */
const NOT_KEPT: StreamEvent = {
  type: "error",
  error_code: errorCatalogue.run_events_not_found.code,
  content:
    "This run's events are no longer kept for resuming: its record passed a size bound (STREAM_RESUME_MAX_RUN_BYTES, " +
    "STREAM_RESUME_MAX_USER_BYTES or STREAM_RESUME_MAX_BYTES). The run itself goes on; read its messages from the conversation's history once it has ended.",
};

/** What a resume from past the last event of an ended run gets. */
function pastTheEnd(after: number, last: number): StreamEvent {
  return {
    type: "error",
    error_code: errorCatalogue.validation_failed.code,
    content: `Last-Event-ID (or after) ${after} is past the last event of this run (${last}).`,
  };
}

/**
 * Take every event of the run into `writer` (a failure as its error events), then its end. The run
 * reports its own end (ok, or its failure), as every run does: counted, timed, its span closed.
 */
async function record(stream: RunEvents, writer: RunEventWriter, scope: RequestScope, settings: StreamSettings): Promise<void> {
  try {
    for await (const event of stream.events) writer.append(event);
    writer.end(true);
  } catch (thrown) {
    // The error event is the same in both framings: the record keeps events, not frames.
    const { events, error } = failureEvents(thrown, scope.logger, settings.development, FRAMINGS.sse);
    scope.errorCode = error.errorCode;
    for (const event of events) writer.append(event);
    writer.end(false);
  }
}

/**
 * Write entries in `framing` until the last: `[DONE]` (SSE) after a clean end, keepalive comments
 * while the run is silent. A dropped record ends with NOT_KEPT; a reader that asked from past an
 * ended run's last event gets an error event saying so (at the last event: just the end). Those two
 * error events carry no position. A client that leaves stops only its own reading.
 */
export async function writeReplay(res: Response, replay: RunReplay, framing: "sse" | "jsonl", settings: StreamSettings): Promise<void> {
  const frames = FRAMINGS[framing];
  res.status(200).set({ "Content-Type": frames.contentType, "Cache-Control": "no-cache, no-transform", "X-Accel-Buffering": "no" });
  res.flushHeaders();
  const output = new StreamOutput(res, settings.maxUnsentBytes);
  const keepalive = frames.keepalive ? setInterval(() => output.send(frames.keepalive!), settings.keepaliveSeconds * 1000) : undefined;
  const encode = framing === "sse" ? encodeSse : encodeJsonl;
  try {
    for await (const entry of replay.entries) {
      if ("dropped" in entry) {
        output.send(frames.encode(NOT_KEPT));
        break;
      }
      if ("end" in entry) {
        // The end entry's number follows the last event's; no client ever saw it as an event.
        if (entry.seq <= replay.after) output.send(frames.encode(pastTheEnd(replay.after, entry.seq - 1)));
        else if (entry.clean && frames.done) output.send(frames.done);
        break;
      }
      if (!output.send(encode(entry))) break;
      keepalive?.refresh();
    }
  } finally {
    clearInterval(keepalive);
    if (output.slowConsumer) settings.metrics.streamCuts.inc({ reason: "slow_consumer" });
    res.end();
  }
}

/**
 * Serve a new resumable stream: record the run under `key` and answer with its events as the run makes
 * them, numbered as the record numbers them. The run outlives the response (admission keeps its slot
 * and deadline until the recording ends); once the client has left, nothing more is queued for it.
 */
export async function serveResumable(
  res: Response,
  stream: RunEvents,
  key: string,
  framing: "sse" | "jsonl",
  settings: StreamSettings,
  logs: StreamLogs,
): Promise<void> {
  const scope = scopeOf(res);
  const { runId, userId } = stream.run;
  let live: EntryQueue | undefined = new EntryQueue();
  const leave = () => {
    live?.close();
    live = undefined;
  };
  const logged = logs.open(runId, key, userId);
  let seq = 0;
  const writer: RunEventWriter = {
    append(event) {
      logged.append(event);
      live?.push({ seq: ++seq, event });
    },
    end(clean) {
      logged.end(clean);
      live?.push({ seq: ++seq, end: true, clean });
    },
  };
  const entries = live.reader(leave);
  res.once("close", leave);
  scope.outlives = record(stream, writer, scope, settings);
  await writeReplay(res, { agent: stream.run.agent.name, after: 0, entries }, framing, settings);
}
