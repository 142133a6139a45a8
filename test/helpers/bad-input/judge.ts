import { errorCatalogue } from "../../../src/http/api-error.ts";
import type { RawOutcome } from "./raw-http.ts";

/** Why an answer is not acceptable; undefined when it is. */
export type Verdict =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: "5xx" | "hung" | "no-response" | "unexpected-status" | "malformed-error" | "malformed-success" | "stream-error-5xx"; readonly note: string };

/** Error codes every catalogue entry of which is a server error (a stream error event with one is a 5xx in disguise). */
const SERVER_ERROR_CODES: ReadonlySet<string> = (() => {
  const statuses = new Map<string, number>();
  for (const entry of Object.values(errorCatalogue) as Array<{ status: number; code?: string }>) {
    if (entry.code) statuses.set(entry.code, Math.min(statuses.get(entry.code) ?? 999, entry.status));
  }
  return new Set([...statuses].filter(([, status]) => status >= 500).map(([code]) => code));
})();

function jsonOf(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The events of a stream body: SSE `data:` frames or JSON Lines. */
function streamEvents(contentType: string, text: string): { events: unknown[]; malformed: string | undefined } {
  const events: unknown[] = [];
  const lines = contentType.startsWith("text/event-stream")
    ? text.split("\n").filter((l) => l.startsWith("data: ") && l !== "data: [DONE]").map((l) => l.slice(6))
    : text.split("\n").filter((l) => l.trim());
  for (const line of lines) {
    const event = jsonOf(line);
    if (event === undefined) return { events, malformed: `unparseable event ${line.slice(0, 80)}` };
    events.push(event);
  }
  if (contentType.startsWith("text/event-stream")) {
    const last = events.at(-1) as { type?: unknown } | undefined;
    if (!text.includes("data: [DONE]") && last?.type !== "error") return { events, malformed: "SSE ended with neither [DONE] nor an error event" };
  }
  return { events, malformed: undefined };
}

/**
 * The generator's rule: every answer is a success or a well-formed JSON error below 500
 * (`{detail, error_code}`, both non-empty strings), in time. A stream's error event counts as the
 * status its code stands for.
 */
export function judge(outcome: RawOutcome, method: string): Verdict {
  if (outcome.kind === "hung") return { ok: false, reason: "hung", note: `no complete answer in ${outcome.ms} ms; got ${JSON.stringify(outcome.partial.slice(0, 120))}` };
  if (outcome.kind === "closed") return { ok: false, reason: "no-response", note: `${outcome.error ?? "closed"}; got ${JSON.stringify(outcome.partial.slice(0, 120))}` };
  const { status, headers, body } = outcome.response;
  const text = body.toString("utf8");
  const contentType = headers["content-type"] ?? "";
  const isJson = /^application\/json\s*(;|$)/i.test(contentType);
  if (status >= 500) return { ok: false, reason: "5xx", note: `${status} ${text.slice(0, 200)}` };
  if (status < 200 || (status >= 300 && status < 400)) return { ok: false, reason: "unexpected-status", note: `${status} ${contentType}` };
  if (status >= 400) {
    if (!isJson) return { ok: false, reason: "malformed-error", note: `${status} with content-type ${JSON.stringify(contentType)}: ${text.slice(0, 120)}` };
    if (method === "HEAD") return { ok: true };
    const error = jsonOf(text) as { detail?: unknown; error_code?: unknown } | undefined;
    if (typeof error?.detail !== "string" || !error.detail || typeof error.error_code !== "string" || !error.error_code) {
      return { ok: false, reason: "malformed-error", note: `${status} ${text.slice(0, 200)}` };
    }
    return { ok: true };
  }
  if (method === "HEAD") return { ok: true };
  if (isJson && jsonOf(text) === undefined) return { ok: false, reason: "malformed-success", note: `${status} unparseable JSON` };
  if (contentType.startsWith("text/event-stream") || contentType.startsWith("application/jsonl")) {
    const { events, malformed } = streamEvents(contentType, text);
    if (malformed) return { ok: false, reason: "malformed-success", note: malformed };
    for (const event of events as Array<{ type?: unknown; error_code?: unknown; content?: unknown }>) {
      if (event.type === "error" && (typeof event.error_code !== "string" || SERVER_ERROR_CODES.has(event.error_code))) {
        return { ok: false, reason: "stream-error-5xx", note: `${String(event.error_code)}: ${String(event.content).slice(0, 120)}` };
      }
    }
  }
  return { ok: true };
}
