import type { Router } from "express";
import { ApiError } from "../api-error.ts";

/**
 * Give every route of `router` a last handler that answers 405 `method_not_allowed`, with an
 * `Allow` header naming the methods the route serves (HEAD wherever GET is served, as Express
 * answers HEAD with the GET handler). Express runs a route's handlers in order and only those of the
 * request's method, so the 405 runs exactly when none of them matched. Call it once, after the
 * router's routes are declared. (The route table's operations do the same in mount-operations.ts.)
 */
export function refuseOtherMethods(router: Router): Router {
  for (const layer of router.stack) {
    const route = layer.route;
    if (!route) continue;
    const methods = new Set<string>();
    for (const handler of route.stack) if (handler.method) methods.add(handler.method.toUpperCase());
    if (methods.has("GET")) methods.add("HEAD");
    const allow = [...methods].join(", ");
    route.all(() => {
      throw new ApiError("method_not_allowed", { headers: { Allow: allow } });
    });
  }
  return router;
}
