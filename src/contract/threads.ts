import { z } from "zod";
import { namedSchemas } from "./named-schemas.ts";
import { queryCount, queryText } from "./requests.ts";

/** Listing a caller's conversations with an agent. */

export const THREADS_DEFAULT_LIMIT = 20;
export const THREADS_MAX_LIMIT = 100;

/** A list page: an empty user_id counts as omitted; limit 1 to 100 (default 20); offset at least 0. */
export const threadsQuerySchema = z.object({
  user_id: queryText("")
    .max(256, { error: "at most 256 characters" })
    .optional()
    .transform((value) => value || undefined)
    .describe("Trusted callers: any user (default AUTH_SERVICE_USER_ID). Token users: omit or their own id."),
  limit: queryCount(1)
    .pipe(z.number().max(THREADS_MAX_LIMIT, { error: `must be an integer from 1 to ${THREADS_MAX_LIMIT}` }))
    .optional()
    .describe(`Page size, 1 to ${THREADS_MAX_LIMIT} (default ${THREADS_DEFAULT_LIMIT}).`),
  offset: queryCount(0).optional().describe("Conversations to skip (default 0)."),
});
export type ThreadsQuery = z.output<typeof threadsQuerySchema>;

export const threadSummarySchema = z
  .object({
    thread_id: z.string().describe("The public thread id"),
    title: z.string().nullable().describe("The start of the first human message (at most 80 characters); null when there is none"),
    created_at: z.string().describe("When the conversation's first message was stored (ISO 8601, UTC)"),
    updated_at: z.string().describe("When its messages last changed (ISO 8601, UTC)"),
    message_count: z.number().int().describe("Messages in the conversation"),
  })
  .register(namedSchemas, { id: "ThreadSummary" });

export const threadListSchema = z
  .object({
    threads: z.array(threadSummarySchema).describe("Most recently updated first"),
    total: z.number().int().describe("The caller's conversations with this agent"),
    next_offset: z.number().int().nullable().describe("Offset of the next page; null on the last page"),
  })
  .register(namedSchemas, { id: "ThreadList" });
export type ThreadList = z.input<typeof threadListSchema>;
