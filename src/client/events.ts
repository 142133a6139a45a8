import { AgentClientError, describeDetail, isRecord } from "./errors.ts";
import type { ChatMessage, StreamItem } from "./types.ts";

/**
 * Read one stream event (`{type, content}`) into what a stream yields: the token's text, the message,
 * an AgentClientError for an `error` event, or `undefined` for an event type this client does not know
 * (skipped, so a newer service can add event types without breaking older clients).
 */
export function readEvent(raw: string, protocol: "SSE" | "JSON Lines"): StreamItem | undefined {
  let event: unknown;
  try {
    event = JSON.parse(raw);
  } catch (error) {
    throw malformed(protocol, raw, "not JSON", error);
  }
  if (!isRecord(event) || typeof event.type !== "string") throw malformed(protocol, raw, "no event type");
  switch (event.type) {
    case "token":
      if (typeof event.content !== "string") throw malformed(protocol, raw, "token content is not a string");
      return event.content;
    case "message":
      if (!isChatMessage(event.content)) throw malformed(protocol, raw, "message content is not a message");
      return event.content;
    case "error":
      throw new AgentClientError(`the agent run failed: ${describeDetail(event.content)}`, {
        kind: "event",
        errorCode: typeof event.error_code === "string" ? event.error_code : null,
        detail: event.content,
      });
    default:
      return undefined;
  }
}

export function isChatMessage(value: unknown): value is ChatMessage {
  return isRecord(value) && typeof value.type === "string" && "content" in value;
}

function malformed(protocol: string, raw: string, why: string, cause?: unknown): AgentClientError {
  const shown = raw.length > 200 ? `${raw.slice(0, 200)}…` : raw;
  return new AgentClientError(`malformed ${protocol} frame (${why}): ${shown}`, { kind: "protocol", detail: raw, cause });
}
