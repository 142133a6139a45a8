import { createHash } from "node:crypto";

/** Prefix of every checkpoint thread id the service writes; the version lets the scheme change later. */
export const STORAGE_KEY_PREFIX = "lat:v1:";

/** A canonical storage key: the prefix and 64 lowercase hex digits. */
export const STORAGE_KEY_PATTERN = /^lat:v1:[0-9a-f]{64}$/;

/**
 * JSON text byte-identical to Python's `json.dumps(value, separators=(",", ":"))`
 * (ensure_ascii on): everything outside printable ASCII is written as a lowercase `\uXXXX` escape.
 */
export function pythonCompactJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[^\x20-\x7e]/g,
    (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/**
 * The checkpoint thread id of one conversation. Two users or two agents that use the same public
 * thread id select different conversations because all three parts go into the hash.
 */
export function storageKey(userId: string, agentId: string, threadId: string): string {
  const digest = createHash("sha256").update(pythonCompactJson([userId, agentId, threadId]), "utf8").digest("hex");
  return STORAGE_KEY_PREFIX + digest;
}
