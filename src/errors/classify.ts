import { GraphRecursionError } from "@langchain/langgraph";
import { isDatabaseError } from "../checkpoints/database-errors.ts";
import { classifyProviderError } from "../models/provider-errors.ts";
import { ApiError } from "./api-error.ts";

/** Why a run's AbortSignal fired. Carried as the signal's reason. */
export class RunAborted extends Error {
  constructor(readonly reason: "deadline" | "client_disconnected" | "lock_lost" | "shutdown") {
    super(`run aborted: ${reason}`);
    this.name = "RunAborted";
  }
}

/**
 * The catalogue's answer to a failure of the checkpoint database (DatabaseUnavailableError from the
 * storage layer, or a driver's error that reached here another way); undefined for anything else.
 */
export function classifyDatabaseError(error: unknown): ApiError | undefined {
  return isDatabaseError(error) ? new ApiError("database_unavailable") : undefined;
}

/**
 * Turn whatever a run threw into the ApiError the caller sees. `abortReason` is the run signal's
 * reason when it fired: it explains an abort better than the error the graph threw for it.
 */
export function classifyRunError(error: unknown, abortReason?: unknown): ApiError {
  if (abortReason instanceof RunAborted) {
    switch (abortReason.reason) {
      case "deadline":
        return new ApiError("request_timeout");
      case "lock_lost":
        return new ApiError("lock_unavailable", { detail: "The conversation lock was lost during the run; the run was stopped." });
      case "shutdown":
        return new ApiError("shutting_down");
      case "client_disconnected":
        return new ApiError("run_failed", { detail: "The client disconnected; the run was stopped." });
    }
  }
  if (error instanceof ApiError) return error;
  if (error instanceof GraphRecursionError) {
    return new ApiError("recursion_limit", {
      detail: "The run reached its recursion limit before finishing; raise recursion_limit or simplify the request.",
    });
  }
  const database = classifyDatabaseError(error);
  if (database) return database;
  const provider = classifyProviderError(error);
  if (provider) return provider;
  return new ApiError("run_failed");
}
