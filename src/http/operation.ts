import type { z } from "zod";
import type { RegisteredAgent } from "../agents/agent.ts";
import type { Principal } from "../auth/principal.ts";
import type { RunEvents } from "../conversations/agent-run.ts";
import type { RunReplay } from "../coordination/run-events/event-log.ts";
import type { Logger } from "../observability/logger.ts";
import type { PlatformEvent } from "../platform/run-chunks.ts";
import type { ErrorKind } from "./api-error.ts";
import type { RequestScope } from "./request-scope.ts";

/** What one operation of the API is: declared once, mounted and documented from the same entry. */

export type Method = "get" | "post" | "patch" | "delete";

/** A JSON answer the operation may give: its status and shape. */
export interface ResponseSpec {
  readonly description: string;
  readonly schema: z.ZodType;
}

interface OperationBase {
  readonly method: Method;
  /** The path without the agent segment, e.g. `/invoke`. */
  readonly path: string;
  /** Served at `/{agent_id}<path>` for a named agent and at `<path>` for the default agent. */
  readonly agentScoped: boolean;
  /** Probes: served without a bearer token and outside admission. */
  readonly public?: boolean;
  readonly summary: string;
  readonly query?: z.ZodObject;
  readonly body?: {
    readonly schema: z.ZodType;
    readonly required: boolean;
    /** Each of the body's fields may come as a query parameter instead. */
    readonly orQuery?: boolean;
  };
  /** Accepts an `Idempotency-Key` header (idempotency.ts): a retry replays the first answer. */
  readonly idempotent?: boolean;
  /** The failures the operation reports, beyond those every authenticated operation may. */
  readonly errors: readonly ErrorKind[];
  /**
   * Controls a run rather than starting one (POST /cancel): admitted through the worker's own small
   * reserve (runtime.controlAdmission), so it is served when REQUEST_MAX_CONCURRENT is taken.
   */
  readonly control?: true;
  /** Starts a run: every answer carries its id in `X-Run-Id`, set before the first byte. */
  readonly runId?: true;
}

export interface JsonOperation extends OperationBase {
  /** Every status it answers with a body of its own (error answers are `errors`). */
  readonly responses: Readonly<Partial<Record<200 | 201 | 202 | 204 | 503, ResponseSpec>>>;
}

export interface StreamOperation extends OperationBase {
  /**
   * Server-Sent Events or JSON Lines, one StreamEvent each; `platform`: the LangGraph Platform API's
   * Server-Sent Events (`event: <mode>` and `data: <JSON>`).
   */
  readonly stream: "sse" | "jsonl" | "platform";
  readonly streamDescription: string;
  /** Reads a resumable run's recorded events (coordination/run-events) instead of starting a run. */
  readonly replay?: true;
}

export type Operation = JsonOperation | StreamOperation;

export function isStream(operation: Operation): operation is StreamOperation {
  return "stream" in operation;
}

/** What a handler receives: the parsed request, and who is asking. */
export interface OperationInput<O extends Operation> {
  readonly body: O["body"] extends { schema: infer S extends z.ZodType } ? z.output<S> : undefined;
  readonly query: O["query"] extends infer Q extends z.ZodType ? z.output<Q> : undefined;
  /** The body (with any query fields) as sent, before parsing. */
  readonly sent: unknown;
  readonly agent: O["agentScoped"] extends true ? RegisteredAgent : undefined;
  readonly principal: Principal;
  /** The run's one controller: aborted at the deadline, on the client's disconnect, or when the conversation lock is lost. */
  readonly run: AbortController;
  readonly logger: Logger;
  /** Path parameters other than the agent (e.g. `run_id`). */
  readonly params: Readonly<Record<string, string>>;
  /** Headers of the request, lower-case names (e.g. `last-event-id`). */
  readonly header: (name: string) => string | undefined;
  /** Name the run this request starts: `X-Run-Id` before the first byte of the answer, and the request's log line. */
  readonly announceRun: (runId: string) => void;
  /** Send a header with the answer (before its first byte). */
  readonly setHeader: (name: string, value: string) => void;
  /** The request's shared state (the run it started, for its log line and trace). */
  readonly scope: RequestScope;
}

/** One of the answers an operation declares: the status, and a body of that status's shape. */
export type AnswerOf<R> = {
  [S in keyof R & number]: { readonly status: S; readonly body: R[S] extends ResponseSpec ? z.input<R[S]["schema"]> : never };
}[keyof R & number];

export type HandlerOf<O extends Operation> = O extends StreamOperation
  ? O extends { replay: true }
    ? (input: OperationInput<O>) => Promise<RunReplay>
    : O extends { stream: "platform" }
      ? (input: OperationInput<O>) => Promise<RunEvents<PlatformEvent>>
      : (input: OperationInput<O>) => Promise<RunEvents>
  : O extends JsonOperation
    ? (input: OperationInput<O>) => Promise<AnswerOf<O["responses"]>> | AnswerOf<O["responses"]>
    : never;

/** A handler for every operation of `table`, each typed by its own entry. */
export type HandlersOf<T extends Record<string, Operation>> = { readonly [K in keyof T]: HandlerOf<T[K]> };

/**
 * An operation's path as the OpenAPI document (and the route label) writes it: `/{agent_id}/invoke`
 * for a named agent, `/invoke` for the default one, `:run_id` as `{run_id}`.
 */
export function documentedPath(operation: Operation, withAgent: boolean): string {
  const path = operation.path.replace(/:([A-Za-z_]+)/g, "{$1}");
  return operation.agentScoped && withAgent ? `/{agent_id}${path}` : path;
}

/** The Express path of an operation: `{/:agentId}` makes the agent segment optional. */
export function expressPath(operation: Operation): string {
  return operation.agentScoped ? `{/:agentId}${operation.path}` : operation.path;
}

/** Names of an operation's own path parameters (`/runs/:run_id/stream` → run_id). */
export function pathParameters(operation: Operation): string[] {
  return [...operation.path.matchAll(/:([A-Za-z_]+)/g)].map((match) => match[1]!);
}
