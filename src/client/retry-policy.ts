import type { AgentClientError } from "./errors.ts";

/**
 * The opt-in retry policy: a call that the service refused with 503 (a full worker, a database or
 * provider briefly away) or 429 (a provider's rate limit) is sent again after the service's
 * Retry-After, or after an exponential backoff when it gave none. Nothing else is retried: a
 * failure after the service accepted the request may already have run part of a turn. Every
 * attempt shares the call's `timeout`; the caller's signal stops the waiting too. When retries are
 * on, invoke, addMessages and createFeedback always carry an Idempotency-Key (the caller's, or one
 * the client makes), so a retry can never run a turn twice. A failure the service replayed for the
 * key (`Idempotent-Replayed: true`) is not retried: it is the key's final answer.
 */
export interface RetryPolicy {
  /** Attempts in all, the first included (default 3). */
  maxAttempts?: number;
  /** The first backoff when the service sent no Retry-After, doubled each time (default 500 ms). */
  initialDelayMs?: number;
  /** The longest wait between attempts: a Retry-After beyond it ends the retries (default 10 s). */
  maxDelayMs?: number;
}

export interface ResolvedRetryPolicy {
  readonly maxAttempts: number;
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
}

/** The statuses worth another attempt. */
export const RETRIED_STATUSES: ReadonlySet<number> = new Set([429, 503]);

/** `true` means the defaults; `false` or absent, no retries (the client's original behaviour). */
export function resolveRetryPolicy(option: RetryPolicy | boolean | undefined): ResolvedRetryPolicy | undefined {
  if (!option) return undefined;
  const policy = option === true ? {} : option;
  return {
    maxAttempts: Math.max(1, Math.floor(policy.maxAttempts ?? 3)),
    initialDelayMs: Math.max(0, policy.initialDelayMs ?? 500),
    maxDelayMs: Math.max(0, policy.maxDelayMs ?? 10_000),
  };
}

/** Milliseconds a Retry-After value asks for: seconds, or an HTTP date; undefined when unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * How long to wait before attempt `attempt + 1` after `error` on attempt `attempt` (1-based), or
 * undefined when the call should fail now.
 */
export function retryDelay(policy: ResolvedRetryPolicy, error: AgentClientError, attempt: number): number | undefined {
  if (attempt >= policy.maxAttempts) return undefined;
  if (error.kind !== "http" || error.statusCode === null || !RETRIED_STATUSES.has(error.statusCode)) return undefined;
  const asked = retryAfterMs(error.retryAfter);
  const delay = asked ?? Math.min(policy.initialDelayMs * 2 ** (attempt - 1), policy.maxDelayMs);
  return delay <= policy.maxDelayMs ? delay : undefined;
}

