import { Router, type Request, type Response } from "express";
import { verifyFeedbackProof } from "../../auth/feedback-proof.ts";
import { effectiveUserId, type Principal } from "../../auth/principal.ts";
import type { Config } from "../../config/schema.ts";
import { ApiError } from "../../errors/api-error.ts";
import { feedbackRecord, ordinaryMetadata } from "../../feedback/record.ts";
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

async function handleFeedback(runtime: Runtime, req: Request, res: Response): Promise<void> {
  const agent = agentOf(runtime, req, res);
  const { run_id, key, score, user_id, feedback_token, comment, ...extra } = parseBody(feedbackRequestSchema, req.body);
  const principal = principalOf(res);
  const userId = effectiveUserId(principal, user_id, runtime.config.AUTH_SERVICE_USER_ID);
  checkFeedbackProof(runtime.config, principal, feedback_token, userId, agent.name, run_id);

  const record = feedbackRecord({ agentId: agent.name, runId: run_id, userId, key, score, comment, metadata: ordinaryMetadata(extra) });
  const delivery = await runtime.feedback.submit(record, signalOf(res), scopeOf(res).logger);
  res.status(201).json({ feedback_id: record.id, run_id, key, delivery });
}

export function feedbackRoutes(runtime: Runtime): Router {
  const router = Router();
  router.post("{/:agentId}/feedback", (req, res) => handleFeedback(runtime, req, res));
  return router;
}
