import type { Request, Response } from "express";
import type { Principal } from "../auth/principal.ts";
import type { Logger } from "../observability/logger.ts";

/**
 * Per-request state shared by the middleware and the route: who is calling, the request's logger,
 * and the one controller that stops its run (deadline, client disconnect, or a lost conversation lock).
 */
export interface RequestScope {
  readonly requestId: string;
  readonly logger: Logger;
  principal?: Principal;
  /** The run's one controller: admission aborts it at the deadline or a disconnect, the conversation service when its lock is lost. */
  run?: AbortController;
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

export function runOf(res: Response): AbortController {
  const run = scopeOf(res).run;
  if (!run) throw new Error("route reached without admission");
  return run;
}

/** The route template that matched (e.g. `{/:agentId}/invoke`), never the raw path with ids. */
export function routeTemplate(req: Request): string {
  const path = (req.route as { path?: unknown } | undefined)?.path;
  return typeof path === "string" ? path : "unmatched";
}
