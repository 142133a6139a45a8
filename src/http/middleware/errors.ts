import type { ErrorRequestHandler, RequestHandler } from "express";
import { describeDatabaseFailure } from "../../checkpoints/database-errors.ts";
import { ApiError } from "../../errors/api-error.ts";
import { classifyDatabaseError } from "../../errors/classify.ts";
import { scopeOf } from "../request-scope.ts";

export const notFound: RequestHandler = () => {
  throw new ApiError("not_found");
};

/** body-parser's errors carry a `type`; map them onto the spec's 413 and 422. */
function fromBodyParser(error: unknown): ApiError | undefined {
  const type = (error as { type?: unknown }).type;
  if (type === "entity.too.large") return new ApiError("payload_too_large");
  if (type === "entity.parse.failed") return new ApiError("validation_failed", { detail: "The request body is not valid JSON." });
  if (type === "encoding.unsupported" || type === "charset.unsupported") {
    return new ApiError("validation_failed", { detail: "The request body's encoding is not supported." });
  }
  return undefined;
}

/** The one place errors become responses: `{detail, error_code?}`, never a stack. */
export function errorHandler(): ErrorRequestHandler {
  return (error: unknown, _req, res, _next) => {
    const database = error instanceof ApiError ? undefined : classifyDatabaseError(error);
    const apiError = error instanceof ApiError ? error : fromBodyParser(error) ?? database ?? new ApiError("internal");
    const scope = scopeOf(res);
    if (database) {
      // An outage is not a bug: no stack, and nothing of the connection string.
      scope?.logger.warn({ error_code: database.errorCode, db: describeDatabaseFailure(error) }, "database unavailable");
    } else if (apiError.status >= 500 && !(error instanceof ApiError)) {
      scope?.logger.error({ err: error }, "unhandled error");
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.status(apiError.status).set(apiError.headers).json(apiError.toBody());
  };
}
