import type { ChatMessage } from "../contract/messages.ts";
import { RunFailure } from "../conversations/turns.ts";
import type { Logger } from "../observability/logger.ts";
import type { ServiceMetrics } from "../observability/metrics.ts";
import type { ApiError } from "./api-error.ts";
import { toApiError } from "./error-answer.ts";

/** How the HTTP layer accounts for runs: the runs counter by outcome, tokens, and a log line per failure. */

/** Log a failed run without its error text leaking into the response. */
export function logRunFailure(logger: Logger, failure: RunFailure, error: ApiError): void {
  const level = error.status >= 500 && error.errorCode !== "request_timeout" ? "error" : "warn";
  const { run } = failure;
  logger[level](
    { run_id: run.runId, agent: run.agent.name, error_code: error.errorCode, cause_type: (failure.cause as Error | undefined)?.name },
    "run failed",
  );
}

/** Count a run answered in one piece: ok with its tokens, or the failure's error code (and log it). */
export async function countedRun(metrics: ServiceMetrics, logger: Logger, agent: string, answer: Promise<ChatMessage>): Promise<ChatMessage> {
  let message: ChatMessage;
  try {
    message = await answer;
  } catch (thrown) {
    if (!(thrown instanceof RunFailure)) throw thrown;
    const error = toApiError(thrown.error);
    metrics.runs.inc({ agent, outcome: error.errorCode ?? "error" });
    logRunFailure(logger, thrown, error);
    throw error;
  }
  metrics.runs.inc({ agent, outcome: "ok" });
  metrics.countTokens(agent, message);
  return message;
}
