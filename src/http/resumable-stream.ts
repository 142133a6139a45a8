import type { Response } from "express";
import type { StreamEvent } from "../contract/messages.ts";
import type { RunEvents } from "../conversations/agent-run.ts";
import { EntryQueue } from "../coordination/run-events/entry-queue.ts";
import type { LogEntry, RecordedEvent, RunEventWriter, RunReplay } from "../coordination/run-events/event-log.ts";
import type { StreamLogs } from "../coordination/run-events/stream-logs.ts";
import type { PlatformEvent } from "../platform/run-chunks.ts";
import { ApiError } from "./api-error.ts";
import { failureEvents, FRAMINGS, PLATFORM_SSE, StreamOutput, type Framing, type StreamSettings } from "./event-stream.ts";
import { scopeOf, type RequestScope } from "./request-scope.ts";

/**
 * Resumable streams (`stream_resumable: true`). The run's events are recorded (coordination/run-events) by a
 * pump that goes on when the client leaves, within the request's deadline; the response gets them from
 * the pump as they come, and any later resume (GET /runs/{run_id}/stream) reads the record. Each event
 * carries its sequence number: SSE as `id:`, JSON Lines as `seq`.
 */

type Numbered = Extract<LogEntry, { event: unknown }>;

/**
 * How a kind of resumable stream goes on the wire: its framing, each recorded event with its number,
 * and the error events a replay may end with.
 */
export interface ReplayFraming<E> {
  readonly frames: Framing<E>;
  numbered(entry: Numbered): string;
  /** What a resume gets in place of events its run's record no longer keeps (it passed a size bound). */
  readonly notKept: E;
  /** What a resume from past the last event of an ended run gets. */
  pastTheEnd(after: number, last: number): E;
}

const NOT_KEPT_TEXT =
  "This run's events are no longer kept for resuming: its record passed a size bound (STREAM_RESUME_MAX_RUN_BYTES, " +
  "STREAM_RESUME_MAX_USER_BYTES or STREAM_RESUME_MAX_BYTES). The run itself goes on; read its messages from the conversation's history once it has ended.";
const pastTheEndText = (after: number, last: number) => `Last-Event-ID (or after) ${after} is past the last event of this run (${last}).`;

/** agenthost's own framings: the error events are StreamEvents with the catalogue's codes. */
function ownReplay(framing: "sse" | "jsonl"): ReplayFraming<StreamEvent> {
  const frames = FRAMINGS[framing];
  return {
    frames,
    numbered:
      framing === "sse"
        ? (entry) => `id: ${entry.seq}\ndata: ${JSON.stringify(entry.event)}\n\n`
        : (entry) => `${JSON.stringify({ ...entry.event, seq: entry.seq })}\n`,
    notKept: frames.errorEvent(new ApiError("run_events_not_found"), NOT_KEPT_TEXT),
    pastTheEnd: (after, last) => frames.errorEvent(new ApiError("validation_failed"), pastTheEndText(after, last)),
  };
}

/**
 * The LangGraph Platform API's resumable streams: each event with its record's number as its `id:`,
 * which the SDK sends back as Last-Event-ID.
 */
const PLATFORM_REPLAY: ReplayFraming<PlatformEvent> = {
  frames: PLATFORM_SSE,
  numbered: (entry) => {
    const { event, data } = entry.event as unknown as PlatformEvent;
    return `event: ${event}\ndata: ${JSON.stringify(data)}\nid: ${entry.seq}\n\n`;
  },
  notKept: PLATFORM_SSE.errorEvent(new ApiError("run_events_not_found"), NOT_KEPT_TEXT),
  pastTheEnd: (after, last) => PLATFORM_SSE.errorEvent(new ApiError("validation_failed"), pastTheEndText(after, last)),
};

export const REPLAY_FRAMINGS = { sse: ownReplay("sse"), jsonl: ownReplay("jsonl"), platform: PLATFORM_REPLAY } as const;

/**
 * Take every event of the run into `writer` (a failure as its error events), then its end. The run
 * reports its own end (ok, or its failure), as every run does: counted, timed, its span closed.
 */
async function record<E>(stream: RunEvents<E>, writer: RunEventWriter, scope: RequestScope, settings: StreamSettings, frames: Framing<E>): Promise<void> {
  try {
    for await (const event of stream.events) writer.append(event as RecordedEvent);
    writer.end(true);
  } catch (thrown) {
    const { events, error } = failureEvents(thrown, scope.logger, settings.development, frames);
    scope.errorCode = error.errorCode;
    for (const event of events) writer.append(event as RecordedEvent);
    writer.end(false);
  }
}

/**
 * Write entries in `framing` until the last: `[DONE]` (SSE) after a clean end, keepalive comments
 * while the run is silent. A dropped record ends with NOT_KEPT; a reader that asked from past an
 * ended run's last event gets an error event saying so (at the last event: just the end). Those two
 * error events carry no position. A client that leaves stops only its own reading.
 */
export async function writeReplay<E>(res: Response, replay: RunReplay, framing: ReplayFraming<E>, settings: StreamSettings): Promise<void> {
  const { frames } = framing;
  res.status(200).set({ "Content-Type": frames.contentType, "Cache-Control": "no-cache, no-transform", "X-Accel-Buffering": "no" });
  res.flushHeaders();
  const output = new StreamOutput(res, settings.maxUnsentBytes);
  const keepalive = frames.keepalive ? setInterval(() => output.send(frames.keepalive!), settings.keepaliveSeconds * 1000) : undefined;
  try {
    for await (const entry of replay.entries) {
      if ("dropped" in entry) {
        output.send(frames.encode(framing.notKept));
        break;
      }
      if ("end" in entry) {
        // The end entry's number follows the last event's; no client ever saw it as an event.
        if (entry.seq <= replay.after) output.send(frames.encode(framing.pastTheEnd(replay.after, entry.seq - 1)));
        else if (entry.clean && frames.done) output.send(frames.done);
        break;
      }
      if (!output.send(framing.numbered(entry))) break;
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
export async function serveResumable<E>(
  res: Response,
  stream: RunEvents<E>,
  key: string,
  framing: ReplayFraming<E>,
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
    abandon() {
      logged.abandon();
      leave();
    },
  };
  const entries = live.reader(leave);
  res.once("close", leave);
  scope.outlives = record(stream, writer, scope, settings, framing.frames);
  await writeReplay(res, { agent: stream.run.agent.name, after: 0, entries }, framing, settings);
}
