import { randomUUID } from "node:crypto";
import type { RequestHandler } from "express";
import type { Runtime } from "../../runtime.ts";
import { routeTemplate, type RequestScope } from "../request-scope.ts";

export const REQUEST_ID = /^[\w.:-]{1,128}$/;

/** A request id, a child logger, and one JSON log line when the response closes. */
export function requestContext(runtime: Runtime): RequestHandler {
  return (req, res, next) => {
    const incoming = req.get("x-request-id");
    const requestId = incoming && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    const scope: RequestScope = { requestId, logger: runtime.logger.child({ request_id: requestId }) };
    res.locals.scope = scope;
    res.setHeader("x-request-id", requestId);
    const started = performance.now();
    const { metrics } = runtime;
    metrics.activeRequests.inc();
    res.on("close", () => {
      const route = routeTemplate(req);
      const seconds = (performance.now() - started) / 1000;
      metrics.activeRequests.dec();
      metrics.httpRequests.inc({ route, method: req.method, status: res.statusCode });
      metrics.httpDuration.observe({ route, method: req.method }, seconds);
      scope.logger.info(
        {
          method: req.method,
          route,
          status: res.statusCode,
          duration_ms: Math.round(seconds * 10_000) / 10,
          agent: scope.agent,
          completed: res.writableFinished,
        },
        "request",
      );
    });
    next();
  };
}
