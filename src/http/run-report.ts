import type { ChatMessage } from "../contract/messages.ts";
import { RunFailure } from "../conversations/turns.ts";
import type { Logger } from "../observability/logger.ts";
import type { ServiceMetrics } from "../observability/metrics.ts";
import type { Tracing } from "../observability/tracing.ts";
import type { PreparedRun } from "../runs/prepare.ts";
import type { RequestScope } from "./request-scope.ts";
import type { ApiError } from "./api-error.ts";
import { toApiError } from "./error-answer.ts";

/** How the HTTP layer accounts for runs: the runs counter by outcome, tokens, and a log line per failure. */

/** Log a run that did not end with its answer, without its error text leaking into the response. */
export function logRunFailure(logger: Logger, failure: RunFailure, error: ApiError): void {
  // A client that left is not a failure of the service; a deadline is an expected outcome.
  const level = error.errorCode === "client_disconnected" ? "info" : error.status >= 500 && error.errorCode !== "request_timeout" ? "error" : "warn";
  const { run } = failure;
  logger[level](
    { run_id: run.runId, agent: run.agent.name, error_code: error.errorCode, cause_type: (failure.cause as Error | undefined)?.name },
    "run failed",
  );
}

/**
 * The request starts `run` (its id already announced, announceRun): with tracing on, the run gets
 * a span (child of the request's) that `work` runs under. A run's span ends with its outcome
 * (countedRun, writeEventStream); a run refused before it started (a busy conversation) ends it with
 * the refusal's error code.
 */
export function startRun<T>(tracing: Tracing | undefined, scope: RequestScope, run: PreparedRun, work: () => Promise<T>): Promise<T> {
  return tracing ? traced(tracing, scope, run, work) : work();
}

async function traced<T>(tracing: Tracing, scope: RequestScope, run: PreparedRun, work: () => Promise<T>): Promise<T> {
  const trace = tracing.startRun(run);
  scope.runTrace = trace;
  try {
    return await trace.within(work);
  } catch (thrown) {
    if (!(thrown instanceof RunFailure)) trace.end(toApiError(thrown).errorCode ?? "error");
    throw thrown;
  }
}

/** A run ended: counted and timed by outcome, and its span (tracing on) closed. */
export function endRun(metrics: ServiceMetrics, scope: RequestScope, run: PreparedRun, outcome: string): void {
  metrics.countRun(run.agent.name, outcome, run.preparedAt);
  scope.runTrace?.end(outcome);
}

/** Count a run answered in one piece: ok with its tokens, or the failure's error code (and log it). */
export async function countedRun(metrics: ServiceMetrics, scope: RequestScope, run: PreparedRun, answer: Promise<ChatMessage>): Promise<ChatMessage> {
  let message: ChatMessage;
  try {
    message = await answer;
  } catch (thrown) {
    if (!(thrown instanceof RunFailure)) throw thrown;
    if (thrown.executed) scope.runExecuted = true;
    const error = toApiError(thrown.error);
    endRun(metrics, scope, run, error.errorCode ?? "error");
    logRunFailure(scope.logger, thrown, error);
    throw error;
  }
  scope.runExecuted = true;
  endRun(metrics, scope, run, "ok");
  metrics.countTokens(run.agent.name, message);
  return message;
}
