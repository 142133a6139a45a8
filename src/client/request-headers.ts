/**
 * Headers the client adds to a request besides its own: the caller's hook (tracing, a tenant header,
 * a per-request token from a vault) and the Idempotency-Key of a call that has one.
 */

/** What the header hook is told about the request it adds headers to. */
export interface OutgoingRequest {
  readonly method: string;
  /** The path after baseUrl, with its query: `/chatbot-agent/invoke`. */
  readonly path: string;
  /** 1 for the first attempt; more when the retry policy sends the request again. */
  readonly attempt: number;
}

/**
 * Called before every attempt of every request; the headers it returns are added (they cannot
 * replace the client's authorization, content-type, accept or Idempotency-Key).
 */
export type HeaderHook = (request: OutgoingRequest) => Record<string, string> | undefined | Promise<Record<string, string> | undefined>;

export const IDEMPOTENCY_KEY_HEADER = "idempotency-key";
/** Set on an answer replayed for an Idempotency-Key, failures included: asking again gets it again. */
export const REPLAYED_HEADER = "idempotent-replayed";

/** A new key for a call that is retried: a random UUID from the platform's Web Crypto. */
export function newIdempotencyKey(): string {
  return globalThis.crypto.randomUUID();
}

/** The hook's headers under the client's own: names compared without case. */
export function mergeHeaders(own: Record<string, string>, extra: Record<string, string> | undefined): Record<string, string> {
  if (!extra) return own;
  const taken = new Set(Object.keys(own).map((name) => name.toLowerCase()));
  const merged: Record<string, string> = {};
  for (const [name, value] of Object.entries(extra)) if (!taken.has(name.toLowerCase())) merged[name] = value;
  return { ...merged, ...own };
}
