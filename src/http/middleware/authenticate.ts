import type { RequestHandler } from "express";
import type { Runtime } from "../http-runtime.ts";
import { scopeOf } from "../request-scope.ts";

/**
 * Bearer authentication for every route mounted after it. The token comes as `Authorization: Bearer`
 * or, as LangGraph's SDKs send it, as `x-api-key`; the same tokens mean the same principals. When
 * both are sent, `Authorization` is the one checked. A static token is checked at once; a JWT is
 * verified against its issuer's keys (kept per worker), so that path continues asynchronously.
 */
export function authenticate(runtime: Runtime): RequestHandler {
  return (req, res, next) => {
    const apiKey = req.get("x-api-key");
    const principal = runtime.authenticate(req.get("authorization") ?? (apiKey === undefined ? undefined : `Bearer ${apiKey}`));
    if (!(principal instanceof Promise)) {
      scopeOf(res).principal = principal;
      next();
      return;
    }
    principal.then(
      (verified) => {
        scopeOf(res).principal = verified;
        next();
      },
      (error: unknown) => next(error),
    );
  };
}
