import { GraphRecursionError } from "@langchain/langgraph";
import { classifyStorageError } from "../checkpoints/storage-failure.ts";
import { RunAborted } from "../errors/classify.ts";
import { ServiceError } from "../errors/service-error.ts";
import { classifyProviderError } from "../models/provider-errors.ts";

/** What the run's request chose, where it changes how a failure is reported. */
export interface RunChoices {
  /** The request set recursion_limit: reaching it is the caller's outcome (a refusal), not a failure. */
  readonly callerRecursionLimit?: boolean;
}

/**
 * Turn whatever a run threw into the ServiceError that reports it. `abortReason` is the run signal's
 * reason when it fired: it explains an abort better than the error the graph threw for it. Here,
 * above both, because a run's failure may come from storage or from a model provider.
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
