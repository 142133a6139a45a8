import { z } from "zod";
import { chatMessageSchema } from "./messages.ts";
import { namedSchemas } from "./named-schemas.ts";

/** What the service answers about a conversation: a history page, an append, a clear, a feedback record. */

export const historyPageSchema = z
  .object({
    messages: z.array(chatMessageSchema),
    total: z.number().int().describe("Messages in the conversation"),
    next_offset: z.number().int().nullable().describe("Offset of the next page; null on the last page"),
    interrupts: z
      .array(z.object({ id: z.string(), value: z.unknown() }))
      .optional()
      .describe(
        "Only on the first page (offset 0) of a conversation whose run is paused: the pending interrupts, as the paused run's " +
          "custom_data.interrupts listed them (answer with /resume, or with the next run's input). Absent otherwise.",
      ),
  })
  .register(namedSchemas, { id: "HistoryPage" });
export type HistoryPage = z.infer<typeof historyPageSchema>;

/** What add and clear answer besides their own fields, as the original service did. */
const conversationOutcomeFields = {
  status: z.literal("success"),
  thread_id: z.string(),
  user_id: z.string().nullable().describe("The user_id as the request sent it (null when omitted)."),
  message: z.string(),
};

export const addMessagesResponseSchema = z
  .object({ ...conversationOutcomeFields, added: z.number().int(), total: z.number().int() })
  .register(namedSchemas, { id: "AddMessagesResponse" });

export const clearHistoryResponseSchema = z
  .object({ ...conversationOutcomeFields, cleared: z.literal(true) })
  .register(namedSchemas, { id: "ClearHistoryResponse" });

export const feedbackResponseSchema = z
  .object({
    feedback_id: z.string(),
    run_id: z.string(),
    key: z.string(),
    delivery: z.enum(["delivered", "queued", "skipped"]).describe("skipped: OBSERVABILITY_BACKEND=empty"),
    detail: z
      .string()
      .optional()
      .describe("Only when delivery is skipped: in plain words, that no feedback destination is configured and this feedback was not recorded."),
  })
  .register(namedSchemas, { id: "FeedbackResponse" });
export type FeedbackResponse = z.input<typeof feedbackResponseSchema>;
