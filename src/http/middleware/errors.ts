import type { ErrorRequestHandler, RequestHandler, Response } from "express";
import { describeDatabaseFailure } from "../../checkpoints/database-errors.ts";
import { ApiError } from "../api-error.ts";
import { isReported, toApiError } from "../error-answer.ts";
import { scopeOf, type RequestScope } from "../request-scope.ts";

export const notFound: RequestHandler = () => {
  throw new ApiError("not_found");
};

/** Render an ApiError as the response: status, its headers, `{detail, error_code?}`. */
export function sendError(res: Response, error: ApiError): void {
  const scope = scopeOf(res) as RequestScope | undefined;
  if (scope) scope.errorCode = error.errorCode;
  res.status(error.status).set(error.headers).json(error.toBody());
}

/** The one place errors become responses: `{detail, error_code?}`, never a stack. */
export function errorHandler(): ErrorRequestHandler {
  return (error: unknown, _req, res, _next) => {
    const apiError = toApiError(error);
    const scope = scopeOf(res);
    if (!isReported(error) && apiError.errorCode === "database_unavailable") {
      // An outage is not a bug: no stack, and nothing of the connection string.
      scope?.logger.warn({ error_code: apiError.errorCode, db: describeDatabaseFailure(error) }, "database unavailable");
    } else if (apiError.status >= 500 && !isReported(error)) {
      scope?.logger.error({ err: error }, "unhandled error");
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    sendError(res, apiError);
  };
}
