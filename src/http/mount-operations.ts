import type { Request, RequestHandler, Response } from "express";
import type { RegisteredAgent } from "../agents/agent.ts";
import type { Principal } from "../auth/principal.ts";
import type { RunEvents } from "../conversations/agent-run.ts";
import type { RunReplay } from "../coordination/run-events/event-log.ts";
import type { StreamLogs } from "../coordination/run-events/stream-logs.ts";
import { ApiError } from "./api-error.ts";
import { outlivesClient } from "./platform-streams.ts";
import { REPLAY_FRAMINGS, serveResumable, writeReplay, type ReplayFraming } from "./resumable-stream.ts";
import { documentedPath, expressPath, isStream, pathParameters, type HandlerOf, type JsonOperation, type Operation, type OperationInput } from "./operation.ts";
import { bodyWithQuery, parseBody, parseQuery } from "./parse-input.ts";
import { principalOf, runOf, scopeOf, type RequestScope } from "./request-scope.ts";
import { patternOf, rawParams, segmentsOf, type PathPattern } from "./route-patterns.ts";
import { FRAMINGS, PLATFORM_SSE, writeEventStream, type StreamSettings } from "./event-stream.ts";
import type { PlatformEvent } from "../platform/run-chunks.ts";
import { idempotencyKeyOf, REPLAYED_HEADER, type IdempotentRequests } from "./idempotency.ts";

export interface MountSettings {
  /** The agent a request names (`undefined`: the default agent); refuses an unknown one. */
  /** The agent a path names, for this caller: unknown (404) and forbidden (403 agent_forbidden) are refused. */
  readonly agentNamed: (name: string | undefined, principal: Principal | undefined) => RegisteredAgent;
  readonly streams: StreamSettings;
  /** Where idempotent operations keep their keys; without it the header is ignored. */
  readonly idempotency?: IdempotentRequests;
  /** Where resumable streams record their runs' events. */
  readonly streamLogs: StreamLogs;
}

/** A request that asked for a resumable stream (`stream_resumable: true`). */
function isResumable(body: unknown): boolean {
  return (body as { stream_resumable?: unknown } | undefined)?.stream_resumable === true;
}

/** Each operation's own path parameters, worked out once. */
const PARAM_NAMES = new WeakMap<Operation, readonly string[]>();
function paramNames(operation: Operation): readonly string[] {
  let names = PARAM_NAMES.get(operation);
  if (!names) PARAM_NAMES.set(operation, (names = pathParameters(operation)));
  return names;
}

/**
 * The parsed request as the operation's handler sees it. A class, not an object literal: the
 * principal and the run are read lazily (the public probes have neither), and a literal's getters
 * are new closures for every request, which gives every such object a map of its own. V8 (Node 20)
 * keeps those maps, and through them `res` and all the request's garbage, alive through young
 * collections until a full one (docs/performance.md); a class's getters live on its prototype.
 */
class RequestInput {
  readonly scope: RequestScope;
  readonly header: (name: string) => string | undefined;
  readonly announceRun: (runId: string) => void;
  readonly setHeader: (name: string, value: string) => void;

  constructor(
    private readonly res: Response,
    req: Request,
    readonly params: Readonly<Record<string, string>>,
    readonly agent: RegisteredAgent | undefined,
    readonly sent: unknown,
    readonly body: unknown,
    readonly query: unknown,
  ) {
    const scope = scopeOf(res);
    this.scope = scope;
    // Own functions: handlers take them out of the input (`{ announceRun }`) and call them alone.
    this.header = (name) => req.get(name);
    this.announceRun = (runId) => {
      scope.runId = runId;
      if (!res.headersSent) res.setHeader("X-Run-Id", runId);
    };
    this.setHeader = (name, value) => {
      if (!res.headersSent) res.setHeader(name, value);
    };
  }

  get logger(): RequestScope["logger"] {
    return this.scope.logger;
  }

  get principal(): Principal {
    return principalOf(this.res);
  }

  get run(): AbortController {
    return runOf(this.res);
  }
}

function inputOf(operation: Operation, req: Request, res: Response, agentNamed: MountSettings["agentNamed"]): OperationInput<Operation> {
  // The agent first: an unknown agent is answered before the request is looked at.
  let agent: RegisteredAgent | undefined;
  if (operation.agentScoped) {
    const name = req.params.agentId;
    agent = agentNamed(typeof name === "string" ? name : undefined, scopeOf(res).principal);
    scopeOf(res).agent = agent.name;
  }
  const query = operation.query ? parseQuery(operation.query, req.query) : undefined;
  const sent: unknown = operation.body?.orQuery ? bodyWithQuery(req.body, req.query) : req.body;
  const body = operation.body ? parseBody(operation.body.schema, sent) : undefined;
  const params: Record<string, string> = {};
  for (const name of paramNames(operation)) params[name] = String(req.params[name]);
  return new RequestInput(res, req, params, agent, sent, body, query) as OperationInput<Operation>;
}

/** A handler as the mounter calls it; the table's types were checked where the handlers were written. */
type AnyHandler = (input: OperationInput<Operation>) => unknown;

function serve(id: string, operation: Operation, handler: AnyHandler, settings: MountSettings) {
  if (isStream(operation) && operation.replay) {
    const framing = REPLAY_FRAMINGS[operation.stream];
    return async (req: Request, res: Response) => {
      const input = inputOf(operation, req, res, settings.agentNamed);
      const replay = (await handler(input)) as RunReplay;
      await writeReplay(res, replay, framing as ReplayFraming<unknown>, settings.streams);
    };
  }
  if (isStream(operation) && operation.stream === "platform") {
    return async (req: Request, res: Response) => {
      const input = inputOf(operation, req, res, settings.agentNamed);
      const stream = (await handler(input)) as RunEvents<PlatformEvent>;
      if (outlivesClient(input.body)) {
        await serveResumable(res, stream, stream.run.storageKey, REPLAY_FRAMINGS.platform, settings.streams, settings.streamLogs);
      } else {
        await writeEventStream(res, stream, PLATFORM_SSE, settings.streams);
      }
    };
  }
  if (isStream(operation)) {
    // The Platform's streams were served above.
    const framing = operation.stream as "sse" | "jsonl";
    return async (req: Request, res: Response) => {
      const input = inputOf(operation, req, res, settings.agentNamed);
      const stream = (await handler(input)) as RunEvents;
      if (isResumable(input.body)) {
        await serveResumable(res, stream, stream.run.storageKey, REPLAY_FRAMINGS[framing], settings.streams, settings.streamLogs);
      } else {
        await writeEventStream(res, stream, FRAMINGS[framing], settings.streams);
      }
    };
  }
  return async (req: Request, res: Response) => {
    const input = inputOf(operation, req, res, settings.agentNamed);
    const key = operation.idempotent && settings.idempotency ? idempotencyKeyOf(req) : undefined;
    if (key !== undefined && settings.idempotency && input.agent) {
      const { principal, agent, sent, logger, scope } = input;
      const executed = () => scope.agentRun?.executed === true;
      const runId = () => scope.runId;
      const answering = settings.idempotency.answer(key, { operation: id, principal, agent, sent, logger, executed, runId }, async () => {
        return (await handler(input)) as { status: number; body: unknown };
      });
      // The answer is kept for the key, so the work goes on if the client leaves (within the
      // deadline, holding its slot): the retry the key exists for then gets it instead of a stop.
      scope.outlives ??= answering.then(
        () => undefined,
        () => undefined,
      );
      const once = await answering;
      if (once.replayed) {
        // The first run's id, as on its own answer (every run response names its run).
        if (once.runId !== null) input.announceRun(once.runId);
        res.status(once.status).set(REPLAYED_HEADER, "true").type("application/json").send(once.text);
      } else {
        res.status(once.status).json(once.body);
      }
      return;
    }
    const answer = (await handler(input)) as { status: keyof JsonOperation["responses"]; body: unknown };
    // 202 and 204 carry no body (LangGraph's SDK reads none).
    if (answer.status === 202 || answer.status === 204) res.status(answer.status).end();
    else res.status(answer.status).json(answer.body);
  };
}

/** A path of the table and the handlers of the operations served there, by method. */
interface Route extends PathPattern {
  /** The route's name in metrics, logs and traces, in OpenAPI form: with the agent segment, and without. */
  readonly labels: { readonly withAgent: string; readonly without: string };
  readonly handlers: Map<string, (req: Request, res: Response) => Promise<void>>;
  allow: string;
}

/** The route's parameters when `parts` is its path, decoded; undefined when it is not. */
function matchRoute(route: Route, parts: readonly string[]): Record<string, string> | undefined {
  const raw = rawParams(route, parts);
  if (!raw) return undefined;
  const params: Record<string, string> = {};
  for (const [name, value] of raw) {
    try {
      params[name] = decodeURIComponent(value);
    } catch (error) {
      // Marked as Express's router marks it: a client error, answered 400 bad_request (error-answer.ts).
      throw Object.assign(error as Error, { status: 400 });
    }
  }
  return params;
}

/** The operations middleware, with what it serves ("METHOD path", paths as Express writes them) for the OpenAPI test. */
export type OperationsHandler = RequestHandler & { readonly served: readonly string[] };

/**
 * Serve the public operations (probes) or the authenticated ones, in table order: the first route
 * whose path matches takes the request, a method none of its operations serves is answered 405
 * with `Allow` (HEAD is served by GET, as in Express), and a path no route has goes on to the next
 * middleware. The route names the request in metrics, logs and traces (`/{agent_id}/invoke`).
 *
 * Paths that two routes could both match (`/resume/stream`: the default agent's resume stream, or
 * agent "resume"'s stream) are answered by the route declared first (the route table puts resume
 * before runs); all such overlaps serve POST only. One pass over a short list per request, where
 * an Express router tests each route's pattern in turn through its layers.
 */
export function mountOperations<T extends Record<string, Operation>>(
  operations: T,
  handlers: { readonly [K in keyof T]: HandlerOf<T[K]> },
  settings: MountSettings,
  which: "public" | "authenticated",
): OperationsHandler {
  const routes: Route[] = [];
  const byPath = new Map<string, Route>();
  for (const id of Object.keys(operations) as Array<keyof T & string>) {
    const operation = operations[id]!;
    if ((operation.public === true) !== (which === "public")) continue;
    let route = byPath.get(expressPath(operation));
    if (!route) {
      route = {
        ...patternOf(operation),
        labels: { withAgent: documentedPath(operation, true), without: documentedPath(operation, false) },
        handlers: new Map(),
        allow: "",
      };
      byPath.set(expressPath(operation), route);
      routes.push(route);
    }
    route.handlers.set(operation.method.toUpperCase(), serve(id, operation, handlers[id] as AnyHandler, settings));
  }
  for (const route of routes) {
    const methods = new Set(route.handlers.keys());
    if (methods.has("GET")) methods.add("HEAD");
    route.allow = [...methods].join(", ");
  }

  const served = [...byPath].flatMap(([path, route]) => [...route.handlers.keys()].map((method) => `${method} ${path}`));
  const handler: RequestHandler = (req, res, next) => {
    const parts = segmentsOf(req.path);
    /** Routes whose path matched but which serve another method: a 405 names all their methods. */
    let allow: string[] | undefined;
    for (const route of routes) {
      let params: Record<string, string> | undefined;
      try {
        params = matchRoute(route, parts);
      } catch (error) {
        next(error);
        return;
      }
      if (!params) continue;
      const serveRequest = route.handlers.get(req.method) ?? (req.method === "HEAD" ? route.handlers.get("GET") : undefined);
      if (!serveRequest) {
        // The first route the path matched names a 405 in metrics, logs and traces.
        if (!allow) scopeOf(res).route = params.agentId === undefined ? route.labels.without : route.labels.withAgent;
        (allow ??= []).push(route.allow);
        continue;
      }
      req.params = params;
      scopeOf(res).route = params.agentId === undefined ? route.labels.without : route.labels.withAgent;
      serveRequest(req, res).catch(next);
      return;
    }
    if (allow) next(new ApiError("method_not_allowed", { headers: { Allow: [...new Set(allow.join(", ").split(", "))].join(", ") } }));
    else next();
  };
  return Object.assign(handler, { served });
}

/**
 * Whether a request is for one of `operations` (method and path, as the dispatcher matches them),
 * for middleware that runs before the dispatcher: admission gives the table's control operations
 * their own reserve.
 */
export function requestMatcher(operations: readonly Operation[]): (req: Request) => boolean {
  const patterns = operations.map((operation) => ({ method: operation.method.toUpperCase(), pattern: patternOf(operation) }));
  return (req) => {
    // Asked twice per request (the control body's parser, then admission): the method alone settles most.
    if (!patterns.some(({ method }) => method === req.method)) return false;
    const parts = segmentsOf(req.path);
    return patterns.some(({ method, pattern }) => method === req.method && rawParams(pattern, parts) !== undefined);
  };
}
