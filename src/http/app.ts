import express, { type Express, type Request } from "express";
import { AgentRuns } from "../conversations/agent-runs.ts";
import { Assistants } from "../platform/assistants.ts";
import { BackgroundRuns } from "../background/background-runs.ts";
import { PlatformRuns } from "../platform/platform-runs.ts";
import { PlatformThreads } from "../platform/platform-threads.ts";
import { ConversationService } from "../conversations/conversation-service.ts";
import { ConversationHistory } from "../conversations/history.ts";
import { ConversationList } from "../conversations/thread-list.ts";
import { RunControl } from "../conversations/run-control.ts";
import { Turns } from "../conversations/turns.ts";
import type { Runtime } from "./http-runtime.ts";
import { admission } from "./middleware/admission.ts";
import { authenticate } from "./middleware/authenticate.ts";
import { AgentAccess } from "../auth/agent-access.ts";
import { bodyDeadline } from "./middleware/body-deadline.ts";
import { cors } from "./middleware/cors.ts";
import { fairShareRequests } from "./middleware/fair-share.ts";
import { errorHandler, notFound } from "./middleware/errors.ts";
import { refuseOtherMethods } from "./middleware/method-not-allowed.ts";
import { requestContext } from "./middleware/request-context.ts";
import { toApiError } from "./error-answer.ts";
import { failureEvents, PLATFORM_SSE } from "./event-stream.ts";
import { IdempotentRequests } from "./idempotency.ts";
import { mountOperations, requestMatcher, type MountSettings } from "./mount-operations.ts";
import type { Operation } from "./operation.ts";
import { operations } from "./operations.ts";
import { docsRoutes } from "./routes/docs.ts";
import { feedbackHandlers } from "./routes/feedback.ts";
import { healthHandlers } from "./routes/health.ts";
import { historyHandlers } from "./routes/history.ts";
import { infoHandlers } from "./routes/info.ts";
import { platformHandlers } from "./routes/platform.ts";
import { runControlHandlers } from "./routes/run-control.ts";
import { runHandlers } from "./routes/runs.ts";
import { threadHandlers } from "./routes/threads.ts";
import type { Handlers, RouteServices } from "./routes/services.ts";

export interface AppOptions {
  /** Liveness as the worker sees it; defaults to the runtime's stalled-run tracking. */
  readonly isLive?: () => boolean;
}

/** The JSON parser reads no body on GET and HEAD (bodyDeadline closes such a connection after the answer). */
const readsBody = (req: { method?: string }) => req.method !== "GET" && req.method !== "HEAD";

/** The largest body a control request (POST /cancel: a thread id and a user) may send; 413 beyond. */
export const CONTROL_MAX_BYTES = 16 * 1024;

/** The conversation services the routes call, over the runtime's registry, locks and storage. */
function routeServices(runtime: Runtime): RouteServices {
  const { config } = runtime;
  const access = new AgentAccess(config.AGENT_ACCESS, () => runtime.metrics.authRefusals.inc({ reason: "agent_forbidden" }));
  const conversations = new ConversationService({
    registry: runtime.registry,
    locks: runtime.locks,
    runs: runtime.runTracker,
    serviceUserId: config.AUTH_SERVICE_USER_ID,
    access,
  });
  const store = runtime.conversations;
  const turns = new Turns({ conversations, store, maxMessages: config.CONVERSATION_MAX_MESSAGES, active: runtime.activeRuns });
  // A run's outcome is the error code its failure is answered with.
  const reporting = { metrics: runtime.metrics, tracing: runtime.tracing, outcomeOf: (error: unknown) => toApiError(error).errorCode ?? "error" };
  const records = runtime.checkpoints.platform;
  const assistants = new Assistants(runtime.registry, access);
  const platformThreads = new PlatformThreads({ records, conversations, store, assistants, registry: runtime.registry });
  const fairShare = runtime.fairShare;
  const platformRuns = new PlatformRuns({ config, threads: platformThreads, records, assistants, turns, reporting, canceller: runtime.canceller, fairShare });
  const background = new BackgroundRuns({
    config,
    threads: platformThreads,
    records,
    queue: runtime.runQueue,
    runs: platformRuns,
    canceller: runtime.canceller,
    streamLogs: runtime.streamLogs,
    logger: runtime.logger,
    metrics: runtime.metrics,
    tracing: runtime.tracing,
    failureEvents: (thrown, logger) => failureEvents(thrown, logger, config.ENV_MODE === "development", PLATFORM_SSE).events,
    fairShare,
  });
  runtime.background.attach(background);
  return {
    runtime,
    access,
    conversations,
    runs: new AgentRuns({ config, models: runtime.models, conversations, turns, reporting, fairShare }),
    platform: {
      assistants,
      records,
      threads: platformThreads,
      runs: platformRuns,
      background,
    },
    history: new ConversationHistory({
      conversations,
      store,
      maxPageSize: config.HISTORY_MAX_PAGE_SIZE,
      maxMessages: config.CONVERSATION_MAX_MESSAGES,
    }),
    threads: new ConversationList({ conversations, store, threads: runtime.checkpoints.threads }),
    runControl: new RunControl({ conversations, canceller: runtime.canceller, streamLogs: runtime.streamLogs }),
  };
}

/** The storage key of the conversation an idempotent answer (or a failed run's request) names, for retention. */
function answerThread(conversations: ConversationService): ConstructorParameters<typeof IdempotentRequests>[0]["threadOf"] {
  return (principal, agent, named, sent) => {
    const threadId = (named as { thread_id?: unknown } | null)?.thread_id;
    if (typeof threadId !== "string") return null;
    const userId = (sent as { user_id?: unknown } | null)?.user_id;
    return conversations.resolve(principal, agent, { thread_id: threadId, user_id: typeof userId === "string" && userId ? userId : undefined }).storageKey;
  };
}

/**
 * The Express application, without listening. Order matters: CORS preflights (CORS_ALLOW_ORIGINS)
 * are answered first; every request's body is bounded in time; probes and the reference are public;
 * everything after `authenticate` needs a bearer token; a user's fair share counts the request
 * (FAIR_SHARE_REQUESTS_PER_MINUTE, when set) before anything else; admission takes a worker slot before any body
 * is read, so a worker holds at most REQUEST_MAX_CONCURRENT bodies of up to REQUEST_MAX_BYTES. A
 * control request (POST /cancel) is the exception: its small body (CONTROL_MAX_BYTES) is read first,
 * and only then does it take a slot of its own small reserve, so clients that send half a cancel and
 * stall hold a connection each but never the reserve. The operations come from the route table
 * (operations.ts); each path answers a method it does not serve with 405 (public ones before
 * authentication).
 */
export function createApp(runtime: Runtime, options: AppOptions = {}): Express {
  const services = routeServices(runtime);
  const handlers: Handlers = {
    ...healthHandlers(runtime, options.isLive ?? (() => runtime.runTracker.isLive())),
    ...infoHandlers(services),
    ...runHandlers(services),
    ...historyHandlers(services),
    ...feedbackHandlers(services),
    ...threadHandlers(services),
    ...runControlHandlers(services),
    ...platformHandlers(services),
  };
  const settings: MountSettings = {
    agentNamed: (name, principal) => {
      const agent = services.conversations.agent(name);
      if (principal) services.access.check(principal, agent.name);
      return agent;
    },
    streams: {
      maxUnsentBytes: runtime.config.STREAM_MAX_UNSENT_BYTES,
      keepaliveSeconds: runtime.config.STREAM_KEEPALIVE_INTERVAL,
      development: runtime.config.ENV_MODE === "development",
      metrics: runtime.metrics,
    },
    idempotency: new IdempotentRequests({
      store: runtime.checkpoints.idempotency,
      ttlMs: runtime.config.IDEMPOTENCY_TTL * 1000,
      requestTimeoutMs: runtime.config.REQUEST_TIMEOUT * 1000,
      threadOf: answerThread(services.conversations),
    }),
    streamLogs: runtime.streamLogs,
  };

  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  // Answers are computed per request and carry no validators, so a conditional request never gets
  // a 304: Express's res.send asks req.fresh, which holds for `If-None-Match: *` whatever the etag.
  Object.defineProperty(app.request, "fresh", { configurable: true, enumerable: true, get: () => false });
  app.use(requestContext(runtime));
  if (runtime.config.CORS_ALLOW_ORIGINS.length > 0) app.use(cors(runtime.config.CORS_ALLOW_ORIGINS));
  app.use(bodyDeadline(runtime));
  app.use(mountOperations(operations, handlers, settings, "public"));
  app.use(refuseOtherMethods(docsRoutes()));
  app.use(authenticate(runtime));
  const isControl = requestMatcher(Object.values<Operation>(operations).filter((operation) => operation.control));
  if (runtime.fairShare.countsRequests) app.use(fairShareRequests(runtime, isControl));
  app.use(express.json({ limit: CONTROL_MAX_BYTES, type: (req) => readsBody(req) && isControl(req as Request), strict: true }));
  app.use(admission(runtime, isControl));
  // Bodies are JSON whatever the Content-Type says, so `curl -d` works without a header.
  app.use(express.json({ limit: runtime.config.REQUEST_MAX_BYTES, type: readsBody, strict: true }));
  app.use(mountOperations(operations, handlers, settings, "authenticated"));
  app.use(notFound);
  app.use(errorHandler());
  return app;
}
