import type { z } from "zod";
import type { RegisteredAgent } from "../agents/agent.ts";
import type { Principal } from "../auth/principal.ts";
import type { RunStream } from "../conversations/turns.ts";
import type { Logger } from "../observability/logger.ts";
import type { ErrorKind } from "./api-error.ts";

/** What one operation of the API is: declared once, mounted and documented from the same entry. */

export type Method = "get" | "post" | "delete";

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
  readonly tag: string;
  readonly query?: z.ZodObject;
  readonly body?: {
    readonly schema: z.ZodType;
    readonly required: boolean;
    /** Each of the body's fields may come as a query parameter instead. */
    readonly orQuery?: boolean;
  };
  /** The failures the operation reports, beyond those every authenticated operation may. */
  readonly errors: readonly ErrorKind[];
}

export interface JsonOperation extends OperationBase {
  /** Every status it answers with a body of its own (error answers are `errors`). */
  readonly responses: Readonly<Partial<Record<200 | 201 | 503, ResponseSpec>>>;
}

export interface StreamOperation extends OperationBase {
  /** Server-Sent Events or JSON Lines, one StreamEvent each. */
  readonly stream: "sse" | "jsonl";
  readonly streamDescription: string;
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
}

/** One of the answers an operation declares: the status, and a body of that status's shape. */
export type AnswerOf<R> = {
  [S in keyof R & number]: { readonly status: S; readonly body: R[S] extends ResponseSpec ? z.input<R[S]["schema"]> : never };
}[keyof R & number];

export type HandlerOf<O extends Operation> = O extends StreamOperation
  ? (input: OperationInput<O>) => Promise<RunStream>
  : O extends JsonOperation
    ? (input: OperationInput<O>) => Promise<AnswerOf<O["responses"]>> | AnswerOf<O["responses"]>
    : never;

/** A handler for every operation of `table`, each typed by its own entry. */
export type HandlersOf<T extends Record<string, Operation>> = { readonly [K in keyof T]: HandlerOf<T[K]> };

/** The Express path of an operation: `{/:agentId}` makes the agent segment optional. */
export function expressPath(operation: Operation): string {
  return operation.agentScoped ? `{/:agentId}${operation.path}` : operation.path;
}
