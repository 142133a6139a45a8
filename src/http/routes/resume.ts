import { Router, type Request, type Response } from "express";
import { aimResume, prepareResume } from "../../runs/interrupts.ts";
import type { Runtime } from "../../runtime.ts";
import { principalOf } from "../request-scope.ts";
import { resumeRequestSchema, resumeStreamRequestSchema, type ResumeRequest } from "../schemas.ts";
import { agentOf, JSONL, parseBody, respondInvoke, respondStream, SSE, type Framing } from "./runs.ts";

/**
 * Resume a paused conversation: `{thread_id, user_id?, resume, interrupt_id?}`. Same authentication,
 * admission and conversation lock as a run; what is pending is checked under the lock, so two resumes
 * of one interrupt cannot both run (the second finds nothing pending: 409).
 */
async function handleResume(runtime: Runtime, req: Request, res: Response): Promise<void> {
  const agent = agentOf(runtime, req, res);
  const body: ResumeRequest = parseBody(resumeRequestSchema, req.body);
  const run = prepareResume(runtime.config, agent, principalOf(res), body);
  await respondInvoke(runtime, res, run, (prepared, head) => aimResume(prepared, head, body));
}

async function handleResumeStream(runtime: Runtime, req: Request, res: Response, framing: Framing): Promise<void> {
  const agent = agentOf(runtime, req, res);
  const body = parseBody(resumeStreamRequestSchema, req.body);
  const run = prepareResume(runtime.config, agent, principalOf(res), body);
  await respondStream(runtime, res, run, framing, body.stream_tokens, (prepared, head) => aimResume(prepared, head, body));
}

/** Mounted before the run routes: `/resume/stream` must not read as agent "resume", route `/stream`. */
export function resumeRoutes(runtime: Runtime): Router {
  const router = Router();
  router.post("{/:agentId}/resume", (req, res) => handleResume(runtime, req, res));
  router.post("{/:agentId}/resume/stream", (req, res) => handleResumeStream(runtime, req, res, SSE));
  router.post("{/:agentId}/resume/stream/jsonl", (req, res) => handleResumeStream(runtime, req, res, JSONL));
  return router;
}
