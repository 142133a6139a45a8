import type { Request, Response } from "express";
import type { Principal } from "../auth/principal.ts";
import type { Logger } from "../observability/logger.ts";

/**
 * Per-request state shared by the middleware and the route: who is calling, the request's logger,
 * and the signal that aborts its run (deadline or client disconnect; the route joins the lock's `lost`).
 */
export interface RequestScope {
  readonly requestId: string;
  readonly logger: Logger;
  principal?: Principal;
  /** Aborts on the deadline or client disconnect; the conversation service joins the lock's `lost` signal. */
  signal?: AbortSignal;
  /** Agent name, once the route resolved it (for logs). */
  agent?: string;
}

export function scopeOf(res: Response): RequestScope {
  return res.locals.scope as RequestScope;
}

export function principalOf(res: Response): Principal {
  const principal = scopeOf(res).principal;
  if (!principal) throw new Error("route reached without authentication");
  return principal;
}

export function signalOf(res: Response): AbortSignal {
  const signal = scopeOf(res).signal;
  if (!signal) throw new Error("route reached without admission");
  return signal;
}

/** The route template that matched (e.g. `{/:agentId}/invoke`), never the raw path with ids. */
export function routeTemplate(req: Request): string {
  const path = (req.route as { path?: unknown } | undefined)?.path;
  return typeof path === "string" ? path : "unmatched";
}
