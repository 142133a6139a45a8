import express, { type Express } from "express";
import type { Runtime } from "../runtime.ts";
import { admission } from "./middleware/admission.ts";
import { authenticate } from "./middleware/authenticate.ts";
import { errorHandler, notFound } from "./middleware/errors.ts";
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

/**
 * The Express application, without listening. Order matters: probes and the reference are public;
 * everything after `authenticate` needs a bearer token; admission takes a worker slot before any
 * body is read.
 */
export function createApp(runtime: Runtime, options: AppOptions = {}): Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.use(requestContext(runtime));
  app.use(healthRoutes(runtime, options.isLive ?? (() => runtime.runTracker.isLive())));
  app.use(docsRoutes());
  app.use(authenticate(runtime));
  app.use(admission(runtime));
  // Bodies are JSON whatever the Content-Type says, so `curl -d` works without a header.
  app.use(express.json({ limit: runtime.config.REQUEST_MAX_BYTES, type: () => true, strict: true }));
  app.use(infoRoutes(runtime));
  app.use(resumeRoutes(runtime));
  app.use(runRoutes(runtime));
  app.use(historyRoutes(runtime));
  app.use(feedbackRoutes(runtime));
  app.use(notFound);
  app.use(errorHandler());
  return app;
}
