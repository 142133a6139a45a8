import type { ServiceErrorKind } from "../errors/service-error.ts";

/**
 * Every failure the API reports, in one place: status, error_code, the fixed text a caller sees and
 * the headers it carries. The domain's kinds (ServiceError) and the transport's own (a malformed
 * request, a method a path does not serve) are all here; `toApiError` is where a thrown error
 * becomes one of these answers, and the error middleware renders it as `{detail, error_code}`.
 */
interface CatalogueEntry {
  readonly status: number;
  readonly code?: string;
  readonly detail: string;
  /** Headers every response of this kind carries (the caller may add more). */
  readonly headers?: Readonly<Record<string, string>>;
  /** Headers some responses of this kind carry (when the error names a value for them). */
  readonly sometimes?: readonly string[];
}

export const errorCatalogue = {
  unauthenticated: { status: 401, code: "unauthenticated", detail: "Missing or invalid bearer token.", headers: { "WWW-Authenticate": "Bearer" } },
  forbidden_user: { status: 403, code: "forbidden_user", detail: "This token may not act for the requested user_id." },
  agent_forbidden: { status: 403, code: "agent_forbidden", detail: "This caller may not use this agent (AGENT_ACCESS)." },
  feedback_proof_required: { status: 403, code: "feedback_proof_required", detail: "Feedback from this token needs the run's feedback_token." },
  feedback_proof_invalid: { status: 403, code: "feedback_proof_invalid", detail: "The feedback_token was not issued for this user, agent and run." },
  bad_request: { status: 400, code: "bad_request", detail: "The request is not valid HTTP." },
  undecodable_body: { status: 400, code: "undecodable_body", detail: "The request body could not be decoded with its Content-Encoding." },
  request_aborted: { status: 400, code: "request_aborted", detail: "The client closed the connection before its request body arrived." },
  not_found: { status: 404, code: "not_found", detail: "Not found." },
  method_not_allowed: { status: 405, code: "method_not_allowed", detail: "This path does not accept this method." },
  request_body_timeout: {
    status: 408,
    code: "request_body_timeout",
    detail: "The request was not received in full within the read timeout.",
    headers: { Connection: "close" },
  },
  unknown_agent: { status: 404, code: "unknown_agent", detail: "No agent with this name is registered." },
  conversation_busy: {
    status: 409,
    code: "conversation_busy",
    detail: "The conversation is busy with another request; retry when it finishes.",
    headers: { "Retry-After": "1" },
  },
  conversation_queue_timeout: {
    status: 409,
    code: "conversation_busy",
    detail: "The conversation stayed busy for the whole queue wait; retry later.",
    headers: { "Retry-After": "1" },
  },
  conversation_unreadable: {
    status: 409,
    code: "conversation_unreadable",
    detail:
      "The conversation holds stored data the service cannot read back, so it cannot be run or extended. " +
      "Read what remains with GET /history (unreadable messages show as custom messages of message_type \"unreadable\"), " +
      "then clear it with DELETE /history/clear.",
  },
  conversation_too_long: {
    status: 413,
    code: "conversation_too_long",
    detail: "The conversation has reached the service's message limit (CONVERSATION_MAX_MESSAGES); start a new thread_id or clear this one.",
  },
  payload_too_large: { status: 413, code: "payload_too_large", detail: "The request body exceeds the configured size limit." },
  unsupported_encoding: {
    status: 415,
    code: "unsupported_media_type",
    detail: "The request body's Content-Encoding or charset is not supported (gzip, deflate, br or identity; a UTF charset).",
  },
  expectation_failed: { status: 417, code: "expectation_failed", detail: "Only the Expect value 100-continue is supported." },
  idempotency_in_progress: {
    status: 409,
    code: "idempotency_in_progress",
    detail: "A request with this Idempotency-Key is still running; retry when it has finished to get its answer.",
    headers: { "Retry-After": "1" },
  },
  idempotency_key_reused: {
    status: 422,
    code: "idempotency_key_reused",
    detail: "This Idempotency-Key was used with another request; use a new key for a new request.",
  },
  validation_failed: { status: 422, code: "validation_failed", detail: "The request failed validation." },
  headers_too_large: { status: 431, code: "headers_too_large", detail: "The request headers are too large." },
  service_busy: {
    status: 503,
    code: "service_busy",
    detail: "The worker is at its concurrent request limit; retry shortly.",
    headers: { "Retry-After": "1" },
  },
  auth_unavailable: {
    status: 503,
    code: "auth_unavailable",
    detail: "The identity provider's signing keys could not be read, so the token cannot be verified now; retry shortly.",
    headers: { "Retry-After": "5" },
  },
  shutting_down: {
    status: 503,
    code: "shutting_down",
    detail: "The service is shutting down; retry on another instance.",
    headers: { "Retry-After": "1" },
  },
  database_unavailable: { status: 503, code: "database_unavailable", detail: "The checkpoint database is unavailable." },
  lock_unavailable: { status: 503, code: "lock_unavailable", detail: "The conversation lock service is unavailable." },
  feedback_signing_unavailable: { status: 503, code: "feedback_signing_unavailable", detail: "Feedback from this token needs FEEDBACK_SIGNING_SECRET, which the service does not have." },
  feedback_unavailable: { status: 503, code: "feedback_unavailable", detail: "The observability backend did not accept the feedback; retry later." },
  request_timeout: { status: 504, code: "request_timeout", detail: "The request deadline expired before the run finished." },
  model_authentication_failed: { status: 503, code: "model_authentication_failed", detail: "The model provider rejected the service's credentials; an operator must fix the model configuration." },
  model_rate_limited: {
    status: 429,
    code: "model_rate_limited",
    detail: "The model provider's rate limit was reached; retry later.",
    sometimes: ["Retry-After"],
  },
  user_run_limit: {
    status: 429,
    code: "user_run_limit",
    detail: "This user has as many runs in progress as its fair share allows (FAIR_SHARE_MAX_RUNS); retry when one has ended.",
    headers: { "Retry-After": "1" },
  },
  user_rate_limit: {
    status: 429,
    code: "user_rate_limit",
    detail: "This user has sent as many requests this minute as its fair share allows (FAIR_SHARE_REQUESTS_PER_MINUTE); retry after Retry-After seconds.",
    sometimes: ["Retry-After"],
  },
  user_token_budget: {
    status: 429,
    code: "user_token_budget",
    detail: "This user has used its model-token budget for the day (FAIR_SHARE_DAILY_TOKENS); it renews at midnight UTC (Retry-After).",
    sometimes: ["Retry-After"],
  },
  model_timeout: { status: 504, code: "model_timeout", detail: "The model provider did not answer in time." },
  model_unavailable: { status: 503, code: "model_unavailable", detail: "The model provider is unavailable; retry later." },
  model_request_rejected: { status: 502, code: "model_request_rejected", detail: "The model provider rejected the request." },
  no_pending_interrupt: { status: 409, code: "no_pending_interrupt", detail: "The conversation has no pending interrupt to resume." },
  interrupt_not_pending: { status: 409, code: "interrupt_not_pending", detail: "The named interrupt is not pending in this conversation." },
  run_cancelled: { status: 409, code: "run_cancelled", detail: "The run was cancelled (POST /cancel) before it finished; completed steps stay in the conversation." },
  client_disconnected: {
    // nginx's "client closed request": the client left before its answer, so nobody reads this one;
    // it names the outcome in the request's log line, metrics and trace.
    status: 499,
    code: "client_disconnected",
    detail: "The client closed the connection before the answer; the run was stopped.",
  },
  run_events_not_found: {
    status: 404,
    code: "run_events_not_found",
    detail: "No resumable stream of this run in this conversation: it did not ask for stream_resumable, its events expired (STREAM_RESUME_TTL), or the run is not yours.",
  },
  thread_not_found: { status: 404, code: "thread_not_found", detail: "No such thread: it does not exist, was deleted, or is not yours." },
  thread_exists: { status: 409, code: "thread_exists", detail: "A thread with this id already exists." },
  thread_agent_mismatch: {
    status: 409,
    code: "thread_agent_mismatch",
    detail: "The thread belongs to another assistant: its conversation is with the agent of its first run.",
  },
  run_not_found: { status: 404, code: "run_not_found", detail: "No such run on this thread: it does not exist, was deleted, or is not yours." },
  not_supported: { status: 422, code: "not_supported", detail: "agenthost does not serve this option of the LangGraph Platform API yet." },
  run_events_unavailable: { status: 503, code: "run_events_unavailable", detail: "The store of resumable streams' events is unavailable; retry shortly." },
  recursion_limit_requested: {
    status: 422,
    code: "recursion_limit_exceeded",
    detail: "The run reached the recursion_limit the request set before finishing; raise recursion_limit or simplify the request.",
  },
  recursion_limit: { status: 500, code: "recursion_limit_exceeded", detail: "The run reached its recursion limit." },
  run_failed: { status: 500, code: "run_failed", detail: "The agent run failed." },
  internal: { status: 500, code: "internal_error", detail: "Internal server error." },
} as const satisfies Record<ServiceErrorKind | TransportErrorKind, CatalogueEntry>;

/** Kinds only the HTTP layer reports: the request as HTTP, before any route reads it. */
type TransportErrorKind =
  | "bad_request"
  | "undecodable_body"
  | "request_aborted"
  | "not_found"
  | "method_not_allowed"
  | "request_body_timeout"
  | "unsupported_encoding"
  | "expectation_failed"
  | "headers_too_large"
  | "service_busy"
  | "internal";

export type ErrorKind = keyof typeof errorCatalogue;

export class ApiError extends Error {
  readonly status: number;
  readonly errorCode: string | undefined;
  readonly detail: string;
  readonly headers: Readonly<Record<string, string>>;

  constructor(kind: ErrorKind, options: { detail?: string; headers?: Record<string, string> } = {}) {
    const entry: CatalogueEntry = errorCatalogue[kind];
    const detail = options.detail ?? entry.detail;
    super(detail);
    this.name = "ApiError";
    this.status = entry.status;
    this.errorCode = entry.code;
    this.detail = detail;
    this.headers = { ...entry.headers, ...options.headers };
  }

  toBody(): { detail: string; error_code?: string } {
    return this.errorCode ? { detail: this.detail, error_code: this.errorCode } : { detail: this.detail };
  }
}
