import { createHash } from "node:crypto";
import type { FeedbackRecord } from "../observability/backends/types.ts";

/**
 * Names that identify what a feedback record is about or which record it is. The caller's extra
 * fields are ordinary metadata: any of these (in any spelling: trace_id, traceId, TraceID) is
 * dropped, so metadata cannot redirect feedback to another run, user, trace, observation or
 * provider record, and the proof never reaches a backend.
 */
const RESERVED = new Set([
  "id",
  "feedbackid",
  "feedbacktoken",
  "runid",
  "userid",
  "agentid",
  "threadid",
  "traceid",
  "observationid",
  "sessionid",
  "projectid",
  "sourcerunid",
  "datasetrunid",
  "queueid",
  "configid",
  "comparativeexperimentid",
  "key",
  "score",
  "comment",
  "metadata",
]);

const normalise = (name: string) => name.replace(/[^A-Za-z0-9]/g, "").toLowerCase();

/** True for a name that identifies the feedback's target or the record itself (any spelling). */
export function isReservedName(name: string): boolean {
  return RESERVED.has(normalise(name));
}

/** The extra fields of a feedback body, without reserved names. */
export function ordinaryMetadata(extra: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(extra).filter(([name]) => !isReservedName(name)));
}

/** JSON with object keys sorted at every level, so equal content hashes equally. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value ?? null);
}

/** A name-based UUID (version 8 layout) from the SHA-256 of `text`. */
function uuidFrom(text: string): string {
  const bytes = createHash("sha256").update(text, "utf8").digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x80;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** What the feedback route hands over: the record without its derived id and timestamp. */
export type FeedbackInput = Omit<FeedbackRecord, "id" | "createdAt">;

/**
 * The record every backend receives. Its id is derived from the content, so the same feedback
 * sent twice (a client retry) is one queue job and one backend record, and a redelivery by the
 * queue overwrites instead of duplicating.
 */
export function feedbackRecord(input: FeedbackInput, now: Date = new Date()): FeedbackRecord {
  const id = uuidFrom(
    canonicalJson(["agenthost-feedback-v1", input.agentId, input.userId, input.runId, input.key, input.score, input.comment ?? null, input.metadata]),
  );
  return {
    id,
    agentId: input.agentId,
    runId: input.runId,
    userId: input.userId,
    key: input.key,
    score: input.score,
    comment: input.comment,
    metadata: input.metadata,
    createdAt: now.toISOString(),
  };
}
