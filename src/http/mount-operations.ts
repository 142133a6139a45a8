import { Router, type Request, type Response } from "express";
import type { RegisteredAgent } from "../agents/agent.ts";
import type { Principal } from "../auth/principal.ts";
import type { RunStream } from "../conversations/turns.ts";
import { refuseOtherMethods } from "./middleware/method-not-allowed.ts";
import { expressPath, isStream, type HandlerOf, type JsonOperation, type Operation, type OperationInput } from "./operation.ts";
import { bodyWithQuery, parseBody, parseQuery } from "./parse-input.ts";
import { principalOf, runOf, scopeOf } from "./request-scope.ts";
import { writeEventStream, type StreamSettings } from "./event-stream.ts";

export interface MountSettings {
  /** The agent a request names (`undefined`: the default agent); refuses an unknown one. */
  readonly agentNamed: (name: string | undefined) => RegisteredAgent;
  readonly streams: StreamSettings;
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
  return {
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
  } as OperationInput<Operation>;
}

/** A handler as the mounter calls it; the table's types were checked where the handlers were written. */
type AnyHandler = (input: OperationInput<Operation>) => unknown;

function serve(operation: Operation, handler: AnyHandler, settings: MountSettings) {
  if (isStream(operation)) {
    return async (req: Request, res: Response) => {
      const input = inputOf(operation, req, res, settings.agentNamed);
      const stream = (await handler(input)) as RunStream;
      await writeEventStream(res, stream, operation.stream, settings.streams);
    };
  }
  return async (req: Request, res: Response) => {
    const input = inputOf(operation, req, res, settings.agentNamed);
    const answer = (await handler(input)) as { status: keyof JsonOperation["responses"]; body: unknown };
    res.status(answer.status).json(answer.body);
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
      routes.set(path, route);
    }
    route[operation.method](serve(operation, handlers[id] as AnyHandler, settings));
  }
  return refuseOtherMethods(router);
}
