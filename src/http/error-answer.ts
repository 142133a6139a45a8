import { classifyStorageError } from "../checkpoints/storage-failure.ts";
import { ServiceError } from "../errors/service-error.ts";
import { ApiError } from "./api-error.ts";

/** body-parser's (and raw-body's) error types, onto the catalogue. */
const BODY_PARSER_TYPES: Readonly<Record<string, () => ApiError>> = {
  "entity.too.large": () => new ApiError("payload_too_large"),
  "entity.parse.failed": () => new ApiError("validation_failed", { detail: "The request body is not valid JSON." }),
  "encoding.unsupported": () => new ApiError("unsupported_encoding"),
  "charset.unsupported": () => new ApiError("unsupported_encoding"),
  "request.size.invalid": () => new ApiError("bad_request", { detail: "The request body's length does not match its Content-Length." }),
  "request.aborted": () => new ApiError("request_aborted"),
};

/** Node's zlib reports a body that does not decode with these codes (brotli's start with `ERR__`). */
const DECODER_ERROR = /^(Z_|ERR__)/;

/**
 * Errors raised by the libraries in front of the routes: body-parser (its `type`, or a decoder's
 * error it passed on with status 400) and the router (a path segment that is not valid
 * percent-encoding). Any other client error they mark with a 4xx status is a plain 400; nothing a
 * client sends becomes a 500.
 */
function fromLibraries(error: unknown): ApiError | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const { type, code, status } = error as { type?: unknown; code?: unknown; status?: unknown };
  if (typeof type === "string" && type in BODY_PARSER_TYPES) return BODY_PARSER_TYPES[type]!();
  if (typeof status !== "number" || status < 400 || status > 499) return undefined;
  if (typeof code === "string" && DECODER_ERROR.test(code)) return new ApiError("undecodable_body");
  if (error instanceof URIError) return new ApiError("bad_request", { detail: "The request path is not valid percent-encoding." });
  return new ApiError("bad_request", { detail: "The request is malformed." });
}

/** A domain error's answer: its kind's entry, its own detail, and Retry-After or a token challenge when it names one. */
function fromDomain(error: ServiceError): ApiError {
  return new ApiError(error.kind, {
    ...(error.detail === undefined ? {} : { detail: error.detail }),
    ...(error.retryAfter === undefined && error.challenge === undefined
      ? {}
      : {
          headers: {
            ...(error.retryAfter === undefined ? {} : { "Retry-After": error.retryAfter }),
            ...(error.challenge === undefined ? {} : { "WWW-Authenticate": error.challenge }),
          },
        }),
  });
}

/** The service's own errors: those it raised on purpose, as opposed to a library's or a bug. */
export function isReported(error: unknown): boolean {
  return error instanceof ApiError || error instanceof ServiceError;
}

/**
 * The one place a thrown error becomes the API's answer: a domain error by its kind, a library's
 * error by its type, a storage failure by what it says about the database; anything else is an
 * internal error.
 */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof ServiceError) return fromDomain(error);
  const fromLibrary = fromLibraries(error);
  if (fromLibrary) return fromLibrary;
  const storage = classifyStorageError(error);
  return storage ? fromDomain(storage) : new ApiError("internal");
}
