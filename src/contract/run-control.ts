import { z } from "zod";
import { identifier, userIdField } from "./fields.ts";
import { namedSchemas } from "./named-schemas.ts";

/** Control of a run already under way: stop it (POST /cancel), or read its events again after a dropped stream. */

export const cancelRequestSchema = z
  .strictObject({
    thread_id: identifier.describe("The conversation whose running run to stop (required)."),
    user_id: userIdField.describe("The conversation's owner: trusted callers only; token users omit it or name themselves."),
  })
  .register(namedSchemas, { id: "CancelRequest" });
export type CancelRequest = z.output<typeof cancelRequestSchema>;

export const cancelResponseSchema = z
  .object({
    thread_id: z.string(),
    cancelled: z.boolean().describe("true: a run held the conversation and was told to stop; false: nothing was running."),
    run_id: z.string().nullable().describe("The stopped run's id (its X-Run-Id); null when nothing was running."),
  })
  .register(namedSchemas, { id: "CancelResponse" });

/** One query parameter given once, as plain text. */
function queryText(rule: string) {
  return z.string({ error: (issue) => (issue.input === undefined ? rule : "give it once, as a plain value") });
}

const THREAD_REQUIRED = "required: the conversation the run belongs to";

/** Reading a resumable run's events again: the conversation (only its owner may), and where to start. */
export const runStreamQuerySchema = z.object({
  thread_id: queryText(THREAD_REQUIRED)
    .min(1, { error: THREAD_REQUIRED })
    .max(256, { error: "at most 256 characters" })
    .describe("The run's conversation; only its owner may read the run's events."),
  user_id: queryText("")
    .max(256, { error: "at most 256 characters" })
    .optional()
    .transform((value) => value || undefined)
    .describe("Trusted callers: the conversation's owner. Token users: omit or their own id."),
  after: queryText("must be an integer of at least 0")
    .regex(/^\d{1,9}$/, { error: "must be an integer of at least 0" })
    .transform(Number)
    .optional()
    .describe("Send only the events after this sequence number (default: all). On SSE the Last-Event-ID header does the same and wins."),
});
export type RunStreamQuery = z.output<typeof runStreamQuerySchema>;
