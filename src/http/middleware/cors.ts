import type { RequestHandler } from "express";
import { scopeOf } from "../request-scope.ts";

/**
 * Response headers a browser client reads: when to retry, which request and run it was, and where a
 * LangGraph Platform run can be rejoined (Content-Location, Location).
 */
const EXPOSED = "Retry-After, X-Request-Id, X-Run-Id, Content-Location, Location, X-Pagination-Next, X-Pagination-Total";
/** The methods the API serves (the route table's). */
const METHODS = "GET, POST, PATCH, DELETE";
/** Request headers a browser may send beyond the simple ones (from X-Api-Key on: LangGraph's SDKs and Agent Chat UI). */
const ALLOWED_HEADERS =
  "Authorization, Content-Type, X-Request-Id, Idempotency-Key, Last-Event-ID, traceparent, tracestate, X-Api-Key, X-User-Id, Prefer, X-Auth-Scheme";
/** How long a browser may reuse a preflight's answer, in seconds. */
const PREFLIGHT_MAX_AGE = "600";

/**
 * Cross-origin access for browsers, for the origins of CORS_ALLOW_ORIGINS (`*`: any). A request
 * from an allowed origin gets `Access-Control-Allow-Origin` and the exposed headers, on every
 * answer including errors. A preflight (`OPTIONS` with `Access-Control-Request-Method`) from an
 * allowed origin is answered 204 here, before authentication and admission: browsers send it
 * without credentials. Bearer tokens travel in a header, never cookies, so no credentials mode is
 * offered. Other origins get no CORS headers (the browser then refuses the answer) and are served
 * as if no browser were involved. Mounted only when CORS_ALLOW_ORIGINS names an origin.
 */
export function cors(allowOrigins: readonly string[]): RequestHandler {
  const anyOrigin = allowOrigins.includes("*");
  const allowed = new Set(allowOrigins);
  return (req, res, next) => {
    const origin = req.headers.origin;
    if (origin === undefined || !(anyOrigin || allowed.has(origin))) {
      next();
      return;
    }
    res.setHeader("Access-Control-Allow-Origin", anyOrigin ? "*" : origin);
    if (!anyOrigin) res.vary("Origin");
    if (req.method === "OPTIONS" && req.headers["access-control-request-method"] !== undefined) {
      scopeOf(res).route = "preflight";
      res.setHeader("Access-Control-Allow-Methods", METHODS);
      res.setHeader("Access-Control-Allow-Headers", ALLOWED_HEADERS);
      res.setHeader("Access-Control-Max-Age", PREFLIGHT_MAX_AGE);
      res.status(204).end();
      return;
    }
    res.setHeader("Access-Control-Expose-Headers", EXPOSED);
    next();
  };
}
