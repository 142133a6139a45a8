import { createHmac, timingSafeEqual } from "node:crypto";
import { pythonCompactJson } from "./storage-key.ts";

const PROOF_PREFIX = "v1.";

/**
 * The feedback proof of one run: `v1.` + hex HMAC-SHA256 over the compact JSON
 * `["lat-feedback-v1", user_id, agent_id, run_id]`, keyed by FEEDBACK_SIGNING_SECRET.
 */
export function signFeedbackProof(secret: string, userId: string, agentId: string, runId: string): string {
  const payload = pythonCompactJson(["lat-feedback-v1", userId, agentId, runId]);
  return PROOF_PREFIX + createHmac("sha256", secret).update(payload, "utf8").digest("hex");
}

/** Constant-time check of a presented proof against the one this run would have. */
export function verifyFeedbackProof(
  secret: string,
  presented: string,
  userId: string,
  agentId: string,
  runId: string,
): boolean {
  const expected = Buffer.from(signFeedbackProof(secret, userId, agentId, runId), "utf8");
  const given = Buffer.from(presented, "utf8");
  if (given.length !== expected.length) return false;
  return timingSafeEqual(given, expected);
}
