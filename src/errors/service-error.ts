/**
 * The failures the service's own code reports, by kind. Below the HTTP layer nothing knows a
 * status: code throws a ServiceError naming what went wrong, and the HTTP layer maps each kind to
 * its answer once (src/http/error-answer.ts, onto the catalogue in src/http/api-error.ts).
 *
 * Each kind is a refusal (the request cannot be served as asked: the caller's input, identity or
 * timing; answered 4xx) or a failure (the service or one of its dependencies failed; 5xx).
 */
const SERVICE_ERROR_KINDS = {
  unauthenticated: "refusal",
  forbidden_user: "refusal",
  agent_forbidden: "refusal",
  feedback_proof_required: "refusal",
  feedback_proof_invalid: "refusal",
  unknown_agent: "refusal",
  validation_failed: "refusal",
  payload_too_large: "refusal",
  conversation_busy: "refusal",
  conversation_queue_timeout: "refusal",
  conversation_unreadable: "refusal",
  conversation_too_long: "refusal",
  no_pending_interrupt: "refusal",
  interrupt_not_pending: "refusal",
  recursion_limit_requested: "refusal",
  run_cancelled: "refusal",
  client_disconnected: "refusal",
  run_events_not_found: "refusal",
  thread_not_found: "refusal",
  thread_exists: "refusal",
  thread_agent_mismatch: "refusal",
  run_not_found: "refusal",
  not_supported: "refusal",
  model_rate_limited: "refusal",
  idempotency_in_progress: "refusal",
  idempotency_key_reused: "refusal",
  user_run_limit: "refusal",
  user_rate_limit: "refusal",
  user_token_budget: "refusal",
  shutting_down: "failure",
  auth_unavailable: "failure",
  database_unavailable: "failure",
  lock_unavailable: "failure",
  run_events_unavailable: "failure",
  feedback_signing_unavailable: "failure",
  feedback_unavailable: "failure",
  request_timeout: "failure",
  model_authentication_failed: "failure",
  model_timeout: "failure",
  model_unavailable: "failure",
  model_request_rejected: "failure",
  recursion_limit: "failure",
  run_failed: "failure",
} as const satisfies Record<string, "refusal" | "failure">;

export type ServiceErrorKind = keyof typeof SERVICE_ERROR_KINDS;

export const SERVICE_ERROR_KIND_NAMES = Object.keys(SERVICE_ERROR_KINDS) as readonly ServiceErrorKind[];

export interface ServiceErrorOptions {
  /** Overrides the kind's fixed description; say what was wrong without echoing secrets. */
  readonly detail?: string;
  /** When the caller may retry: delta-seconds or an HTTP date (a model provider's own answer). */
  readonly retryAfter?: string;
  /** The `WWW-Authenticate` challenge of a refused token, when it says more than the kind's own. */
  readonly challenge?: string;
  readonly cause?: unknown;
}

export class ServiceError extends Error {
  readonly kind: ServiceErrorKind;
  readonly detail: string | undefined;
  readonly retryAfter: string | undefined;
  readonly challenge: string | undefined;

  constructor(kind: ServiceErrorKind, options: ServiceErrorOptions = {}) {
    super(options.detail ?? kind, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ServiceError";
    this.kind = kind;
    this.detail = options.detail;
    this.retryAfter = options.retryAfter;
    this.challenge = options.challenge;
  }

  /** The request cannot be served as asked (as opposed to the service failing it). */
  get refusal(): boolean {
    return SERVICE_ERROR_KINDS[this.kind] === "refusal";
  }
}
