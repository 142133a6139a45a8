import { GraphRecursionError } from "@langchain/langgraph";
import { UnreadableCheckpointError } from "../checkpoints/readable-serde.ts";
import { isDatabaseError } from "../checkpoints/database-errors.ts";
import { classifyProviderError } from "../models/provider-errors.ts";
import { ServiceError } from "./service-error.ts";

/** Why a run's AbortSignal fired. Carried as the signal's reason. */
export class RunAborted extends Error {
  constructor(readonly reason: "deadline" | "client_disconnected" | "lock_lost" | "shutdown" | "cancelled") {
    super(`run aborted: ${reason}`);
    this.name = "RunAborted";
  }
}

/**
 * The error for a failure of the checkpoint database (DatabaseUnavailableError from the
 * storage layer, or a driver's error that reached here another way); undefined for anything else.
 */
function classifyDatabaseError(error: unknown): ServiceError | undefined {
  return isDatabaseError(error) ? new ServiceError("database_unavailable") : undefined;
}

/** An UnreadableCheckpointError anywhere in the error's cause chain. */
function isUnreadableConversation(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 5; depth++) {
    if (e instanceof UnreadableCheckpointError) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * Storage failures outside a run (history read, append, clear): an unreadable conversation, an
 * unreachable database. Undefined when the error is neither.
 */
export function classifyStorageError(error: unknown): ServiceError | undefined {
  if (isUnreadableConversation(error)) return new ServiceError("conversation_unreadable");
  return classifyDatabaseError(error);
}

/** What the run's request chose, where it changes how a failure is reported. */
export interface RunChoices {
  /** The request set recursion_limit: reaching it is the caller's outcome (a refusal), not a failure. */
  readonly callerRecursionLimit?: boolean;
}

/**
 * Turn whatever a run threw into the ServiceError that reports it. `abortReason` is the run signal's
 * reason when it fired: it explains an abort better than the error the graph threw for it.
 */
export function classifyRunError(error: unknown, abortReason?: unknown, choices: RunChoices = {}): ServiceError {
  if (abortReason instanceof RunAborted) {
    switch (abortReason.reason) {
      case "deadline":
        return new ServiceError("request_timeout");
      case "lock_lost":
        return new ServiceError("lock_unavailable", { detail: "The conversation lock was lost during the run; the run was stopped." });
      case "shutdown":
        return new ServiceError("shutting_down");
      case "client_disconnected":
        return new ServiceError("client_disconnected");
      case "cancelled":
        return new ServiceError("run_cancelled");
    }
  }
  if (error instanceof ServiceError) return error;
  if (error instanceof GraphRecursionError) {
    if (choices.callerRecursionLimit) return new ServiceError("recursion_limit_requested");
    return new ServiceError("recursion_limit", {
      detail: "The run reached its recursion limit before finishing; raise recursion_limit or simplify the request.",
    });
  }
  return classifyStorageError(error) ?? classifyProviderError(error) ?? new ServiceError("run_failed");
}
