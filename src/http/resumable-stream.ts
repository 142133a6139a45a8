import type { Response } from "express";
import type { RunStream } from "../conversations/turns.ts";
import type { LogEntry, RunEventWriter, RunReplay } from "../runs/stream-log/event-log.ts";
import type { StreamLogs } from "../runs/stream-log/stream-logs.ts";
import type { Logger } from "../observability/logger.ts";
import { failureEvents, FRAMINGS, StreamOutput, type StreamSettings } from "./event-stream.ts";
import { scopeOf } from "./request-scope.ts";

/**
 * Resumable streams (`stream_resumable: true`). The run's events are recorded (runs/stream-log) by a
 * pump that goes on when the client leaves, within the request's deadline; the response, and any later
 * resume (GET /runs/{run_id}/stream), only reads that record. Each event carries its sequence number:
 * SSE as `id:`, JSON Lines as `seq`.
 */

const encodeSse = (entry: Extract<LogEntry, { event: unknown }>) => `id: ${entry.seq}\ndata: ${JSON.stringify(entry.event)}\n\n`;
const encodeJsonl = (entry: Extract<LogEntry, { event: unknown }>) => `${JSON.stringify({ ...entry.event, seq: entry.seq })}\n`;

/** Take every event of the run into `writer` (a failure as its error events), then its end; count how it ended. */
async function record(stream: RunStream, writer: RunEventWriter, logger: Logger, settings: StreamSettings): Promise<void> {
  const agent = stream.run.agent.name;
  let outcome = "ok";
  try {
    for await (const event of stream.events) {
      if (event.type === "message") settings.metrics.countTokens(agent, event.content);
      writer.append(event);
    }
    writer.end(true);
  } catch (thrown) {
    const { events, error } = failureEvents(thrown, logger, settings.development);
    outcome = error.errorCode ?? "error";
    for (const event of events) writer.append(event);
    writer.end(false);
  } finally {
    settings.metrics.runs.inc({ agent, outcome });
  }
}

/**
 * Write recorded entries in `framing` until the end entry: `[DONE]` (SSE) after a clean end, keepalive
 * comments while the run is silent. A client that leaves stops only its own reading.
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
      if ("end" in entry) {
        if (entry.clean && frames.done) output.send(frames.done);
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
 * Serve a new resumable stream: record the run under `key` and answer from the record. The run outlives
 * the response (admission keeps its slot and deadline until the recording ends).
 */
export async function serveResumable(
  res: Response,
  stream: RunStream,
  key: string,
  framing: "sse" | "jsonl",
  settings: StreamSettings,
  logs: StreamLogs,
): Promise<void> {
  const scope = scopeOf(res);
  const { runId } = stream.run;
  const writer = logs.open(runId, key);
  const recorded = record(stream, writer, scope.logger, settings);
  scope.outlives = recorded;
  const reading = new AbortController();
  res.once("close", () => reading.abort());
  const entries = await logs.readLocal(runId, key, 0, reading.signal);
  if (!entries) throw new Error("a resumable run's record vanished before its first read");
  await writeReplay(res, { agent: stream.run.agent.name, entries }, framing, settings);
}
