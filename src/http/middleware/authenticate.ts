import type { RequestHandler } from "express";
import type { Runtime } from "../http-runtime.ts";
import { scopeOf } from "../request-scope.ts";

/** Bearer authentication for every route mounted after it. */
export function authenticate(runtime: Runtime): RequestHandler {
  return (req, res, next) => {
    scopeOf(res).principal = runtime.authenticate(req.get("authorization"));
    next();
  };
}
