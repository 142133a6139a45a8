import type { Request, Response } from "express";
import type { Principal } from "../auth/principal.ts";
import type { Logger } from "../observability/logger.ts";
import type { AgentRun } from "../conversations/agent-run.ts";

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
  /**
   * Set by work whose outcome is kept for a later request (a resumable stream's record, an answer
   * kept for an Idempotency-Key): it goes on when the client leaves, until this settles; admission
   * keeps the slot and the deadline until then instead of stopping the run.
   */
  outlives?: Promise<void>;
  /** Agent name, once the route resolved it (for logs). */
  agent?: string;
  /** The operation's path in OpenAPI form (`/{agent_id}/invoke`), once a route of the table matched. */
  route?: string;
  /** The run the request started, once prepared, or the one an idempotent replay answers for (the request's log line). */
  runId?: string;
  /** The run the request started: whether it began executing decides what an Idempotency-Key keeps. */
  agentRun?: AgentRun;
  /** The error_code the request was answered with (an error answer, or a stream's error event). */
  errorCode?: string;
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

/**
 * The route that matched, never the raw path with ids: the route table's operation in OpenAPI form
 * (`/{agent_id}/invoke`), else the fixed path of another route (`/openapi.json`), else the table's
 * operation whose path it is when the request was answered before reaching it (`known`: a 401, a
 * body that does not parse), else "unmatched" (unknown paths), so the label stays bounded.
 */
export function routeTemplate(req: Request, scope: RequestScope, known: (method: string, path: string) => string | undefined): string {
  if (scope.route) return scope.route;
  const path = (req.route as { path?: unknown } | undefined)?.path;
  if (typeof path === "string") return path;
  return known(req.method, pathOf(req.originalUrl)) ?? "unmatched";
}

/** The path of a request's URL as it arrived (a router mounted on a prefix shortens req.url), without its query. */
function pathOf(url: string): string {
  if (!url.startsWith("/")) {
    // The absolute form (`GET http://host/path HTTP/1.1`).
    try {
      return new URL(url).pathname;
    } catch {
      return "";
    }
  }
  const query = url.indexOf("?");
  return query === -1 ? url : url.slice(0, query);
}
