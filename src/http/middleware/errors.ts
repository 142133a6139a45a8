import type { ErrorRequestHandler, RequestHandler, Response } from "express";
import { describeDatabaseFailure } from "../../checkpoints/database-errors.ts";
import { ApiError } from "../../errors/api-error.ts";
import { classifyStorageError } from "../../errors/classify.ts";
import { scopeOf } from "../request-scope.ts";

export const notFound: RequestHandler = () => {
  throw new ApiError("not_found");
};

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

/** Render an ApiError as the response: status, its headers, `{detail, error_code?}`. */
export function sendError(res: Response, error: ApiError): void {
  res.status(error.status).set(error.headers).json(error.toBody());
}

/** The one place errors become responses: `{detail, error_code?}`, never a stack. */
export function errorHandler(): ErrorRequestHandler {
  return (error: unknown, _req, res, _next) => {
    const apiError = error instanceof ApiError ? error : fromLibraries(error) ?? classifyStorageError(error) ?? new ApiError("internal");
    const scope = scopeOf(res);
    if (!(error instanceof ApiError) && apiError.errorCode === "database_unavailable") {
      // An outage is not a bug: no stack, and nothing of the connection string.
      scope?.logger.warn({ error_code: apiError.errorCode, db: describeDatabaseFailure(error) }, "database unavailable");
    } else if (apiError.status >= 500 && !(error instanceof ApiError)) {
      scope?.logger.error({ err: error }, "unhandled error");
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    sendError(res, apiError);
  };
}
