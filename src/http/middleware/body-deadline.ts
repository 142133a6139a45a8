import type { Request, RequestHandler } from "express";
import type { Config } from "../../config/schema.ts";
import { ApiError } from "../api-error.ts";
import type { Runtime } from "../http-runtime.ts";
import { sendError } from "./errors.ts";

/** Methods whose body the service never reads. */
const BODILESS = new Set(["GET", "HEAD"]);

/** How long a request's headers and body may take to arrive: REQUEST_BODY_TIMEOUT, at most REQUEST_TIMEOUT. */
export function requestReadTimeoutMs(config: Pick<Config, "REQUEST_BODY_TIMEOUT" | "REQUEST_TIMEOUT">): number {
  return Math.min(config.REQUEST_BODY_TIMEOUT, config.REQUEST_TIMEOUT) * 1000;
}

/** The request says a body follows (the test body-parser uses too). */
export function announcesBody(req: Request): boolean {
  const length = req.headers["content-length"];
  return req.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0");
}

/**
 * Bounds the time a request body may take to arrive: REQUEST_BODY_TIMEOUT (never longer than
 * REQUEST_TIMEOUT), counted from the request's arrival. A body still incomplete then is answered
 * 408 `request_body_timeout` with `Connection: close`; closing the connection ends the body read,
 * and with it the request, so its admission slot is released. Mounted first, it covers every route.
 *
 * A GET or HEAD that announces a body is answered without reading it (the JSON parser skips those
 * methods), and its connection is closed after the answer, since the unread body would stand in
 * front of the next request on it.
 *
 * A request answered before its body arrived (401, 404) is no longer watched here: Node's own
 * request timeout closes such a connection (src/http/server.ts).
 */
export function bodyDeadline(runtime: Runtime): RequestHandler {
  const timeoutMs = requestReadTimeoutMs(runtime.config);
  return (req, res, next) => {
    if (!announcesBody(req)) return next();
    if (BODILESS.has(req.method)) {
      res.setHeader("Connection", "close");
      return next();
    }
    const timer = setTimeout(() => {
      if (req.complete) return;
      if (res.headersSent) res.destroy();
      else sendError(res, new ApiError("request_body_timeout"));
    }, timeoutMs);
    const stop = () => clearTimeout(timer);
    req.once("end", stop);
    res.once("close", stop);
    next();
  };
}
