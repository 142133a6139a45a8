import { Router, type Request, type Response } from "express";
import type { RegisteredAgent } from "../agents/agent.ts";
import type { Principal } from "../auth/principal.ts";
import type { RunStream } from "../conversations/turns.ts";
import type { RunReplay } from "../runs/stream-log/event-log.ts";
import type { StreamLogs } from "../runs/stream-log/stream-logs.ts";
import { refuseOtherMethods } from "./middleware/method-not-allowed.ts";
import { serveResumable, writeReplay } from "./resumable-stream.ts";
import { documentedPath, expressPath, isStream, pathParameters, type HandlerOf, type JsonOperation, type Operation, type OperationInput } from "./operation.ts";
import { bodyWithQuery, parseBody, parseQuery } from "./parse-input.ts";
import { principalOf, runOf, scopeOf } from "./request-scope.ts";
import { writeEventStream, type StreamSettings } from "./event-stream.ts";
import { idempotencyKeyOf, REPLAYED_HEADER, type IdempotentRequests } from "./idempotency.ts";

export interface MountSettings {
  /** The agent a request names (`undefined`: the default agent); refuses an unknown one. */
  readonly agentNamed: (name: string | undefined) => RegisteredAgent;
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

/** The parsed request as the operation's handler sees it. */
function inputOf(operation: Operation, req: Request, res: Response, agentNamed: MountSettings["agentNamed"]): OperationInput<Operation> {
  // The agent first: an unknown agent is answered before the request is looked at.
  let agent: RegisteredAgent | undefined;
  if (operation.agentScoped) {
    const name = req.params.agentId;
    agent = agentNamed(typeof name === "string" ? name : undefined);
    scopeOf(res).agent = agent.name;
  }
  const query = operation.query ? parseQuery(operation.query, req.query) : undefined;
  const sent: unknown = operation.body?.orQuery ? bodyWithQuery(req.body, req.query) : req.body;
  const body = operation.body ? parseBody(operation.body.schema, sent) : undefined;
  const params: Record<string, string> = {};
  for (const name of paramNames(operation)) params[name] = String(req.params[name]);
  return {
    params,
    header: (name: string) => req.get(name),
    announceRun: (runId: string) => {
      scopeOf(res).runId = runId;
      if (!res.headersSent) res.setHeader("X-Run-Id", runId);
    },
    body,
    query,
    sent,
    agent,
    get principal(): Principal {
      return principalOf(res);
    },
    get run(): AbortController {
      return runOf(res);
    },
    logger: scopeOf(res).logger,
    scope: scopeOf(res),
  } as OperationInput<Operation>;
}

/** A handler as the mounter calls it; the table's types were checked where the handlers were written. */
type AnyHandler = (input: OperationInput<Operation>) => unknown;

function serve(id: string, operation: Operation, handler: AnyHandler, settings: MountSettings) {
  if (isStream(operation) && operation.replay) {
    return async (req: Request, res: Response) => {
      const input = inputOf(operation, req, res, settings.agentNamed);
      const replay = (await handler(input)) as RunReplay;
      await writeReplay(res, replay, operation.stream, settings.streams);
    };
  }
  if (isStream(operation)) {
    return async (req: Request, res: Response) => {
      const input = inputOf(operation, req, res, settings.agentNamed);
      const stream = (await handler(input)) as RunStream;
      if (isResumable(input.body)) {
        await serveResumable(res, stream, stream.run.storageKey, operation.stream, settings.streams, settings.streamLogs);
      } else {
        await writeEventStream(res, stream, operation.stream, settings.streams);
      }
    };
  }
  return async (req: Request, res: Response) => {
    const input = inputOf(operation, req, res, settings.agentNamed);
    const key = operation.idempotent && settings.idempotency ? idempotencyKeyOf(req) : undefined;
    if (key !== undefined && settings.idempotency && input.agent) {
      const { principal, agent, sent, logger, scope } = input;
      const executed = () => scope.runExecuted === true;
      const runId = () => scope.runId;
      const once = await settings.idempotency.answer(key, { operation: id, principal, agent, sent, logger, executed, runId }, async () => {
        return (await handler(input)) as { status: number; body: unknown };
      });
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
    res.status(answer.status).json(answer.body);
  };
}

/** Name the request's route for metrics, logs and traces in its OpenAPI form (`/{agent_id}/invoke`). */
function labelRoute(operation: Operation) {
  const withAgent = documentedPath(operation, true);
  const without = documentedPath(operation, false);
  return (req: Request, res: Response, next: () => void) => {
    scopeOf(res).route = typeof req.params.agentId === "string" ? withAgent : without;
    next();
  };
}

/**
 * Mount the public operations (probes) or the authenticated ones, in table order, with their
 * handlers on a new router. Operations that share a path share one Express route, so a method none
 * of them serves is answered 405 with `Allow`.
 */
export function mountOperations<T extends Record<string, Operation>>(
  operations: T,
  handlers: { readonly [K in keyof T]: HandlerOf<T[K]> },
  settings: MountSettings,
  which: "public" | "authenticated",
): Router {
  const router = Router();
  const routes = new Map<string, ReturnType<Router["route"]>>();
  for (const id of Object.keys(operations) as Array<keyof T & string>) {
    const operation = operations[id]!;
    if ((operation.public === true) !== (which === "public")) continue;
    const path = expressPath(operation);
    let route = routes.get(path);
    if (!route) {
      route = router.route(path);
      route.all(labelRoute(operation));
      routes.set(path, route);
    }
    route[operation.method](serve(id, operation, handlers[id] as AnyHandler, settings));
  }
  return refuseOtherMethods(router);
}
