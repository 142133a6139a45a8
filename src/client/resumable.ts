import { AgentClientError, isRecord } from "./errors.ts";
import { readEvent } from "./events.ts";
import { decodeSse, StreamEndedEarly } from "./sse.ts";
import type { StreamItem } from "./types.ts";

/** One frame of a resumable stream: what it yields, and its sequence number; or the end. */
export type PositionedFrame = { done: false; seq: number | undefined; item: StreamItem | undefined } | { done: true };

/** A resumable stream's frames, with the sequence number each event carries (SSE `id:`, JSON Lines `seq`). */
export async function* positionedFrames(lines: AsyncIterable<string>, protocol: "SSE" | "JSON Lines"): AsyncGenerator<PositionedFrame, void, undefined> {
  if (protocol === "SSE") {
    for await (const frame of decodeSse(lines)) {
      if (frame.done) {
        yield { done: true };
        return;
      }
      const seq = frame.id === undefined ? undefined : Number(frame.id);
      yield { done: false, seq: Number.isInteger(seq) ? seq : undefined, item: readEvent(frame.data, protocol) };
    }
    return;
  }
  for await (const line of lines) {
    if (line.trim() === "") continue;
    const item = readEvent(line, protocol);
    let seq: number | undefined;
    try {
      const parsed: unknown = JSON.parse(line);
      if (isRecord(parsed) && typeof parsed.seq === "number") seq = parsed.seq;
    } catch {
      // readEvent has refused what does not parse.
    }
    yield { done: false, seq, item };
  }
}

/**
 * Whether a resumable stream may pick up again after `error`: the connection broke or was cut before
 * the end. An answer of the service (an error event, a refused request) and a timeout are final.
 */
export function mayResume(error: unknown): boolean {
  if (error instanceof StreamEndedEarly) return true;
  return error instanceof AgentClientError && error.kind === "network";
}

/** A fresh conversation id where the platform has one to give (Node 20+, browsers). */
export function newThreadId(): string {
  const random = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto?.randomUUID;
  if (!random) throw new AgentClientError("a resumable stream without thread_id needs crypto.randomUUID; pass a thread_id", { kind: "protocol" });
  return random.call(globalThis.crypto);
}

