import type { Request, RequestHandler } from "express";
import type { Runtime } from "../http-runtime.ts";
import { scopeOf } from "../request-scope.ts";

/**
 * Counts each authenticated request of a user whose identity its token gives (a user token, a JWT,
 * the shared secret in token mode) against that user's requests per minute
 * (FAIR_SHARE_REQUESTS_PER_MINUTE, FAIR_SHARE_OVERRIDES), and refuses one past it with 429
 * user_rate_limit before it takes a worker slot or its body is read. A trusted caller names its user
 * per request, in the body: its run-starting requests are counted where the run resolves its user
 * (src/conversations/agent-runs.ts, src/platform/platform-runs.ts, src/background/). Control
 * requests (POST /cancel) are neither counted nor refused: a stop button must get through. Mounted
 * only when some user has a per-minute limit.
 */
export function fairShareRequests(runtime: Runtime, isControl: (req: Request) => boolean): RequestHandler {
  return async (req, res, next) => {
    const user = scopeOf(res).principal?.boundUserId;
    if (user !== undefined && !isControl(req)) await runtime.fairShare.request(user);
    next();
  };
}
