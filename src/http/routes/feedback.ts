import { Router, type Request, type Response } from "express";
import { verifyFeedbackProof } from "../../auth/feedback-proof.ts";
import { effectiveUserId, type Principal } from "../../auth/principal.ts";
import type { Config } from "../../config/schema.ts";
import { ApiError } from "../../errors/api-error.ts";
import { feedbackRecord, isReservedName, ordinaryMetadata } from "../../feedback/record.ts";
import type { Runtime } from "../../runtime.ts";
import { principalOf, scopeOf, signalOf } from "../request-scope.ts";
import { feedbackRequestSchema } from "../schemas.ts";
import { agentOf, parseBody } from "./runs.ts";

/**
 * The proof rule: the trusted shared secret needs none; every other principal must present the
 * proof its run's response carried, made for this user, agent and run (checked in constant time).
 */
export function checkFeedbackProof(config: Config, principal: Principal, proof: string | undefined, userId: string, agentId: string, runId: string): void {
  if (!principal.needsFeedbackProof) return;
  if (!config.FEEDBACK_SIGNING_SECRET) throw new ApiError("feedback_signing_unavailable");
  if (proof === undefined) throw new ApiError("feedback_proof_required");
  if (!verifyFeedbackProof(config.FEEDBACK_SIGNING_SECRET, proof, userId, agentId, runId)) throw new ApiError("feedback_proof_invalid");
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
    throw new ApiError("validation_failed", {
      detail: `Feedback kwargs cannot override the feedback target or identity (${refused.join(", ")}).`,
    });
  }
  if (kwargsComment !== undefined && kwargsComment !== null) {
    if (typeof kwargsComment !== "string" || kwargsComment.length > 10_000) {
      throw new ApiError("validation_failed", { detail: "kwargs.comment: must be a string of at most 10000 characters" });
    }
    if (comment !== undefined && comment !== kwargsComment) {
      throw new ApiError("validation_failed", { detail: "comment: given twice (top level and kwargs) with different text" });
    }
    return { comment: kwargsComment, metadata: rest };
  }
  return { comment, metadata: rest };
}

async function handleFeedback(runtime: Runtime, req: Request, res: Response): Promise<void> {
  const agent = agentOf(runtime, req, res);
  const { run_id, key, score, user_id, feedback_token, comment, kwargs, ...extra } = parseBody(feedbackRequestSchema, req.body);
  const unpacked = unpackKwargs(kwargs, comment);
  const principal = principalOf(res);
  const userId = effectiveUserId(principal, user_id, runtime.config.AUTH_SERVICE_USER_ID);
  checkFeedbackProof(runtime.config, principal, feedback_token, userId, agent.name, run_id);

  const metadata = { ...ordinaryMetadata(extra), ...unpacked.metadata };
  const record = feedbackRecord({ agentId: agent.name, runId: run_id, userId, key, score, comment: unpacked.comment, metadata });
  const delivery = await runtime.feedback.submit(record, signalOf(res), scopeOf(res).logger);
  res.status(201).json({ feedback_id: record.id, run_id, key, delivery });
}

export function feedbackRoutes(runtime: Runtime): Router {
  const router = Router();
  router.post("{/:agentId}/feedback", (req, res) => handleFeedback(runtime, req, res));
  return router;
}
