import { ServiceError } from "../errors/service-error.ts";

/**
 * Recognise a model provider's failure inside whatever a run threw (LangChain and the agent
 * middleware wrap errors, keeping the original as `cause`) and map it to the API's error. Only the
 * status, a Retry-After value and the error's class are read: provider text never leaves here, so it
 * cannot reach a response, a stream's error event or a log line.
 */

const MAX_DEPTH = 8;

/** Classes of the OpenAI and Anthropic SDKs' HTTP errors (both SDKs use these names). */
const STATUS_ERROR_CLASSES = new Set([
  "APIError",
  "BadRequestError",
  "AuthenticationError",
  "PermissionDeniedError",
  "NotFoundError",
  "ConflictError",
  "UnprocessableEntityError",
  "RateLimitError",
  "InternalServerError",
  "GoogleGenerativeAIFetchError",
  "GoogleGenerativeAIResponseError",
]);

const TIMEOUT_CODES = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT", "UND_ERR_CONNECT_TIMEOUT"]);

interface Facts {
  status?: number;
  retryAfter?: string;
  timeout: boolean;
  connection: boolean;
}

function className(e: object): string {
  return (e as { constructor?: { name?: unknown } }).constructor?.name as string ?? "";
}

function headerValue(headers: unknown, name: string): string | undefined {
  if (!headers || typeof headers !== "object") return undefined;
  const get = (headers as { get?: unknown }).get;
  const raw = typeof get === "function" ? (get as (n: string) => unknown).call(headers, name) : (headers as Record<string, unknown>)[name];
  return typeof raw === "string" ? raw : undefined;
}

/** Retry-After as the provider sent it, when it is delta-seconds or an HTTP date. */
function validRetryAfter(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  if (!trimmed) return undefined;
  if (/^\d{1,9}$/.test(trimmed)) return trimmed;
  return Number.isNaN(Date.parse(trimmed)) ? undefined : trimmed;
}

function isProviderStatusError(e: object): boolean {
  const lcCode = (e as { lc_error_code?: unknown }).lc_error_code;
  return (
    STATUS_ERROR_CLASSES.has(className(e)) ||
    (typeof lcCode === "string" && lcCode.startsWith("MODEL_")) ||
    ("headers" in e && "error" in e)
  );
}

function collect(error: unknown): Facts {
  const facts: Facts = { timeout: false, connection: false };
  let e: unknown = error;
  for (let depth = 0; e && typeof e === "object" && depth < MAX_DEPTH; depth++) {
    const status = (e as { status?: unknown }).status;
    if (facts.status === undefined && typeof status === "number" && status >= 400 && isProviderStatusError(e)) {
      facts.status = status;
      facts.retryAfter = validRetryAfter(headerValue((e as { headers?: unknown }).headers, "retry-after"));
    }
    const name = (e as { name?: unknown }).name;
    const code = (e as { code?: unknown }).code;
    const cls = className(e);
    if (cls === "APIConnectionTimeoutError" || name === "TimeoutError" || (typeof code === "string" && TIMEOUT_CODES.has(code))) {
      facts.timeout = true;
    } else if (
      cls === "APIConnectionError" ||
      (typeof code === "string" && code.startsWith("UND_ERR_")) ||
      (cls === "GoogleGenerativeAIError" && /^Error fetching from/.test(String((e as { message?: unknown }).message)))
    ) {
      facts.connection = true;
    }
    e = (e as { cause?: unknown }).cause;
  }
  return facts;
}

/** The API error for a provider failure, or undefined when `error` is not one. */
export function classifyProviderError(error: unknown): ServiceError | undefined {
  const facts = collect(error);
  const { status } = facts;
  if (status !== undefined) {
    if (status === 401 || status === 403) return new ServiceError("model_authentication_failed");
    if (status === 429) {
      return new ServiceError("model_rate_limited", facts.retryAfter ? { retryAfter: facts.retryAfter } : {});
    }
    if (status === 408) return new ServiceError("model_timeout");
    if (status >= 500) return new ServiceError("model_unavailable");
    return new ServiceError("model_request_rejected", {
      detail: `The model provider rejected the request (HTTP ${status}); check the model name and the input.`,
    });
  }
  if (facts.timeout) return new ServiceError("model_timeout");
  if (facts.connection) return new ServiceError("model_unavailable");
  return undefined;
}
