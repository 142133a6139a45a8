import type { RegisteredAgent } from "../agents/agent.ts";
import { verifyFeedbackProof } from "../auth/feedback-proof.ts";
import { effectiveUserId, type Principal } from "../auth/principal.ts";
import type { Config } from "../config/schema.ts";
import type { FeedbackRequest } from "../contract/requests.ts";
import type { FeedbackResponse } from "../contract/responses.ts";
import { ServiceError } from "../errors/service-error.ts";
import type { Logger } from "../observability/logger.ts";
import { NOT_RECORDED_DETAIL, type FeedbackDelivery } from "./delivery.ts";
import { feedbackRecord, isReservedName, ordinaryMetadata } from "./record.ts";

/**
 * The proof rule: the trusted shared secret needs none; every other principal must present the
 * proof its run's response carried, made for this user, agent and run (checked in constant time).
 */
function checkFeedbackProof(config: Config, principal: Principal, proof: string | undefined, userId: string, agentId: string, runId: string): void {
  if (!principal.needsFeedbackProof) return;
  if (!config.FEEDBACK_SIGNING_SECRET) throw new ServiceError("feedback_signing_unavailable");
  if (proof === undefined) throw new ServiceError("feedback_proof_required");
  if (!verifyFeedbackProof(config.FEEDBACK_SIGNING_SECRET, proof, userId, agentId, runId)) throw new ServiceError("feedback_proof_invalid");
}

/**
 * The original client's `kwargs`, unpacked: `comment` is the comment, the rest ordinary metadata. A
 * name in it that would redirect the feedback or change whose it is is refused, not dropped.
 */
function unpackKwargs(kwargs: Record<string, unknown> | undefined, comment: string | undefined): { comment: string | undefined; metadata: Record<string, unknown> } {
  if (!kwargs) return { comment, metadata: {} };
  const { comment: kwargsComment, ...rest } = kwargs;
  const refused = Object.keys(rest).filter(isReservedName);
  if (refused.length) {
    throw new ServiceError("validation_failed", {
      detail: `Feedback kwargs cannot override the feedback target or identity (${refused.join(", ")}).`,
    });
  }
  if (kwargsComment !== undefined && kwargsComment !== null) {
    if (typeof kwargsComment !== "string" || kwargsComment.length > 10_000) {
      throw new ServiceError("validation_failed", { detail: "kwargs.comment: must be a string of at most 10000 characters" });
    }
    if (comment !== undefined && comment !== kwargsComment) {
      throw new ServiceError("validation_failed", { detail: "comment: given twice (top level and kwargs) with different text" });
    }
    return { comment: kwargsComment, metadata: rest };
  }
  return { comment, metadata: rest };
}

export interface FeedbackDependencies {
  readonly config: Config;
  readonly delivery: FeedbackDelivery;
}

/**
 * Feedback on one of the agent's runs, from `principal`: its identity and proof are checked, its
 * kwargs unpacked, and the record handed to the delivery (inline, queued, or skipped).
 */
export async function submitFeedback(
  deps: FeedbackDependencies,
  principal: Principal,
  agent: RegisteredAgent,
  request: FeedbackRequest,
  signal: AbortSignal,
  logger: Logger,
): Promise<FeedbackResponse> {
  const { config } = deps;
  const { run_id, key, score, user_id, feedback_token, comment, kwargs, ...extra } = request;
  const unpacked = unpackKwargs(kwargs, comment);
  const userId = effectiveUserId(principal, user_id, config.AUTH_SERVICE_USER_ID);
  checkFeedbackProof(config, principal, feedback_token, userId, agent.name, run_id);

  const metadata = { ...ordinaryMetadata(extra), ...unpacked.metadata };
  const record = feedbackRecord({ agentId: agent.name, runId: run_id, userId, key, score, comment: unpacked.comment, metadata });
  const delivery = await deps.delivery.submit(record, signal, logger);
  return { feedback_id: record.id, run_id, key, delivery, ...(delivery === "skipped" ? { detail: NOT_RECORDED_DETAIL } : {}) };
}
