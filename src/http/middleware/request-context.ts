import { randomUUID } from "node:crypto";
import type { RequestHandler } from "express";
import type { Runtime } from "../http-runtime.ts";
import { routeLabeler } from "../route-patterns.ts";
import type { Operation } from "../operation.ts";
import { operations } from "../operations.ts";
import { routeTemplate, type RequestScope } from "../request-scope.ts";

export const REQUEST_ID = /^[\w.:-]{1,128}$/;

/** The status a request closed before its answer is logged and counted with (nginx's "client closed request"). */
const CLIENT_CLOSED = 499;

/**
 * The methods the API serves: the route table's, with HEAD (GET's answers) and OPTIONS (CORS
 * preflights). Node's parser accepts some thirty others (PROPFIND, PURGE, …); each would add a
 * series per route and status, so the metrics label them all "other".
 */
function methodLabels(): (method: string) => string {
  const served = new Set(["GET", "HEAD", "OPTIONS", ...Object.values<Operation>(operations).map((operation) => operation.method.toUpperCase())]);
  return (method) => (served.has(method) ? method : "other");
}

/**
 * A request id, a child logger, the request's span (tracing on), and one JSON log line when the
 * response closes, with the error_code, run id and trace id when there are.
 */
export function requestContext(runtime: Runtime): RequestHandler {
  const { metrics, tracing } = runtime;
  const methodLabel = methodLabels();
  const knownRoute = routeLabeler(operations);
  return (req, res, next) => {
    const incoming = req.get("x-request-id");
    const requestId = incoming && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    const span = tracing?.startRequest(req);
    // With tracing on, every line the request logs names its trace.
    const bindings = span ? { request_id: requestId, trace_id: span.traceId } : { request_id: requestId };
    const scope: RequestScope = { requestId, logger: runtime.logger.child(bindings) };
    res.locals.scope = scope;
    res.setHeader("x-request-id", requestId);
    const started = performance.now();
    metrics.activeRequests.inc();
    res.on("close", () => {
      const route = routeTemplate(req, scope, knownRoute);
      const seconds = (performance.now() - started) / 1000;
      // Closed before a byte of the answer: the client left (nginx's 499), whatever a late answer would have said.
      const status = res.headersSent ? res.statusCode : CLIENT_CLOSED;
      const errorCode = res.headersSent ? scope.errorCode : "client_disconnected";
      metrics.activeRequests.dec();
      const method = methodLabel(req.method);
      metrics.httpRequests.inc({ route, method, status });
      metrics.httpDuration.observe({ route, method }, seconds);
      scope.logger.info(
        {
          method: req.method,
          route,
          status,
          duration_ms: Math.round(seconds * 10_000) / 10,
          agent: scope.agent,
          error_code: errorCode,
          run_id: scope.runId,
          completed: res.writableFinished,
        },
        "request",
      );
      span?.end({ route, method: req.method, status, errorCode, runId: scope.runId });
    });
    if (span) span.within(next);
    else next();
  };
}
