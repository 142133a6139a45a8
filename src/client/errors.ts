/**
 * Where an AgentClientError came from:
 * - `http`: the service answered with a failure status (statusCode, errorCode, retryAfter are set);
 * - `event`: a stream carried an `error` event (errorCode when the event had one);
 * - `protocol`: a frame or body that does not parse, or an SSE stream that ended without `[DONE]`;
 * - `timeout`: the client's `timeout` or `streamTimeout` expired;
 * - `network`: the request could not be sent or the connection broke.
 */
export type AgentClientErrorKind = "http" | "event" | "protocol" | "timeout" | "network";

export interface AgentClientErrorInit {
  kind: AgentClientErrorKind;
  statusCode?: number | null;
  errorCode?: string | null;
  retryAfter?: string | null;
  detail?: unknown;
  cause?: unknown;
  /** The request's X-Request-Id, when the service answered. */
  requestId?: string | null;
  /** The run's X-Run-Id, when the request started a run. */
  runId?: string | null;
}

/** Every failure the client reports, except a cancellation the caller asked for. */
export class AgentClientError extends Error {
  override readonly name = "AgentClientError";
  readonly kind: AgentClientErrorKind;
  /** HTTP status of a failed response; `null` otherwise. */
  readonly statusCode: number | null;
  /** The service's `error_code` (from the body or the error event); `null` when it gave none. */
  readonly errorCode: string | null;
  /** The Retry-After header exactly as given (seconds or an HTTP date); `null` when absent. */
  readonly retryAfter: string | null;
  /** The body's `detail` (or the event's content) as received. */
  readonly detail: unknown;
  /** The service's id of the request (X-Request-Id), to find it in the service's logs; `null` when no answer came. */
  readonly requestId: string | null;
  /** The id of the run the request started (X-Run-Id); `null` when it started none. */
  readonly runId: string | null;

  constructor(message: string, init: AgentClientErrorInit) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.kind = init.kind;
    this.statusCode = init.statusCode ?? null;
    this.errorCode = init.errorCode ?? null;
    this.retryAfter = init.retryAfter ?? null;
    this.detail = init.detail ?? null;
    this.requestId = init.requestId ?? null;
    this.runId = init.runId ?? null;
  }
}

/** The service's ids of a response: its request id and, for a run, the run id. */
export function idsOf(response: Response): { requestId: string | null; runId: string | null } {
  return { requestId: response.headers.get("x-request-id"), runId: response.headers.get("x-run-id") };
}

/** `error` with the request and run ids of the response it came with (when it has none of its own). */
export function withIds(error: unknown, ids: { requestId: string | null; runId: string | null }): unknown {
  if (!(error instanceof AgentClientError) || (error.requestId !== null && error.runId !== null)) return error;
  if (ids.requestId === null && ids.runId === null) return error;
  const { kind, statusCode, errorCode, retryAfter, detail } = error;
  const copy = new AgentClientError(error.message, {
    kind,
    statusCode,
    errorCode,
    retryAfter,
    detail,
    cause: error.cause,
    requestId: error.requestId ?? ids.requestId,
    runId: error.runId ?? ids.runId,
  });
  return copy;
}

const MAX_DETAIL_CHARS = 500;

/** A one-line description of a `detail` value: a string, a validation list, or anything else as JSON. */
export function describeDetail(detail: unknown): string {
  let text: string;
  if (typeof detail === "string") {
    text = detail;
  } else if (Array.isArray(detail)) {
    text = detail
      .map((item) => (isRecord(item) && typeof item.msg === "string" ? item.msg : JSON.stringify(item)))
      .join("; ");
  } else {
    text = JSON.stringify(detail) ?? String(detail);
  }
  text = text.replace(/\s+/g, " ").trim();
  return text.length > MAX_DETAIL_CHARS ? `${text.slice(0, MAX_DETAIL_CHARS)}…` : text;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Turn a failed response into an AgentClientError, using `{detail, error_code}` when the body has them. */
export async function errorFromResponse(response: Response): Promise<AgentClientError> {
  const text = await response.text().catch(() => "");
  let detail: unknown = text.trim() === "" ? response.statusText : text;
  let errorCode: string | null = null;
  try {
    const body: unknown = JSON.parse(text);
    if (isRecord(body)) {
      if ("detail" in body) detail = body.detail;
      if (typeof body.error_code === "string") errorCode = body.error_code;
    }
  } catch {
    // Not JSON (a proxy's HTML page, say): the text itself is the detail.
  }
  const described = describeDetail(detail);
  return new AgentClientError(`agenthost answered ${response.status}${described ? `: ${described}` : ""}`, {
    kind: "http",
    statusCode: response.status,
    errorCode,
    retryAfter: response.headers.get("retry-after"),
    detail,
    ...idsOf(response),
  });
}
