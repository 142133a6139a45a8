import express, { type Express } from "express";
import type { Runtime } from "../runtime.ts";
import { admission } from "./middleware/admission.ts";
import { authenticate } from "./middleware/authenticate.ts";
import { bodyDeadline } from "./middleware/body-deadline.ts";
import { errorHandler, notFound } from "./middleware/errors.ts";
import { refuseOtherMethods } from "./middleware/method-not-allowed.ts";
import { requestContext } from "./middleware/request-context.ts";
import { docsRoutes } from "./routes/docs.ts";
import { feedbackRoutes } from "./routes/feedback.ts";
import { healthRoutes } from "./routes/health.ts";
import { historyRoutes } from "./routes/history.ts";
import { infoRoutes } from "./routes/info.ts";
import { resumeRoutes } from "./routes/resume.ts";
import { runRoutes } from "./routes/runs.ts";

export interface AppOptions {
  /** Liveness as the worker sees it; defaults to the runtime's stalled-run tracking. */
  readonly isLive?: () => boolean;
}

/** The JSON parser reads no body on GET and HEAD (bodyDeadline closes such a connection after the answer). */
const readsBody = (req: { method?: string }) => req.method !== "GET" && req.method !== "HEAD";

/**
 * The Express application, without listening. Order matters: every request's body is bounded in
 * time; probes and the reference are public; everything after `authenticate` needs a bearer token;
 * admission takes a worker slot before any body is read. Each router answers a method its paths do
 * not serve with 405 (public ones before authentication).
 */
export function createApp(runtime: Runtime, options: AppOptions = {}): Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  // Answers are computed per request and carry no validators, so a conditional request never gets
  // a 304: Express's res.send asks req.fresh, which holds for `If-None-Match: *` whatever the etag.
  Object.defineProperty(app.request, "fresh", { configurable: true, enumerable: true, get: () => false });
  app.use(requestContext(runtime));
  app.use(bodyDeadline(runtime));
  app.use(refuseOtherMethods(healthRoutes(runtime, options.isLive ?? (() => runtime.runTracker.isLive()))));
  app.use(refuseOtherMethods(docsRoutes()));
  app.use(authenticate(runtime));
  app.use(admission(runtime));
  // Bodies are JSON whatever the Content-Type says, so `curl -d` works without a header.
  app.use(express.json({ limit: runtime.config.REQUEST_MAX_BYTES, type: readsBody, strict: true }));
  app.use(refuseOtherMethods(infoRoutes(runtime)));
  app.use(refuseOtherMethods(resumeRoutes(runtime)));
  app.use(refuseOtherMethods(runRoutes(runtime)));
  app.use(refuseOtherMethods(historyRoutes(runtime)));
  app.use(refuseOtherMethods(feedbackRoutes(runtime)));
  app.use(notFound);
  app.use(errorHandler());
  return app;
}
