import { z } from "zod";
import { namedSchemas } from "./named-schemas.ts";
import { queryCount, queryText } from "./requests.ts";

/** Listing a caller's conversations with an agent. */

export const THREADS_DEFAULT_LIMIT = 20;
export const THREADS_MAX_LIMIT = 100;

/** Where a cursor points: the last conversation of a page, by its update time (ms) and public thread id. */
export interface ThreadCursor {
  readonly updatedAt: number;
  readonly threadId: string;
}

/** The longest cursor: one of a 256-character thread id, every character escaped in its JSON. */
const CURSOR_MAX_CHARS = 2_100;
const CURSOR_REFUSED = "not a cursor this list gave; pass next_cursor as it came";

/** A cursor as callers see it: opaque text (base64url of `[updatedAt, threadId]`). */
export function encodeThreadCursor(cursor: ThreadCursor): string {
  return Buffer.from(JSON.stringify([cursor.updatedAt, cursor.threadId]), "utf8").toString("base64url");
}

/** The place a cursor points to; undefined for text that is not a cursor. */
export function decodeThreadCursor(text: string): ThreadCursor | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(text)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(text, "base64url").toString("utf8"));
  } catch {
    return undefined;
  }
  if (!Array.isArray(value) || value.length !== 2) return undefined;
  const [updatedAt, threadId] = value as [unknown, unknown];
  if (typeof updatedAt !== "number" || !Number.isSafeInteger(updatedAt) || updatedAt < 0) return undefined;
  if (typeof threadId !== "string" || threadId.length < 1 || threadId.length > 256) return undefined;
  return { updatedAt, threadId };
}

/**
 * A list page: an empty user_id counts as omitted; limit 1 to 100 (default 20); offset at least 0,
 * or a cursor (a page's next_cursor), not both.
 */
export const threadsQuerySchema = z
  .object({
    user_id: queryText("")
      .max(256, { error: "at most 256 characters" })
      .optional()
      .transform((value) => value || undefined)
      .describe("Trusted callers: any user (default AUTH_SERVICE_USER_ID). Token users: omit or their own id."),
    limit: queryCount(1)
      .pipe(z.number().max(THREADS_MAX_LIMIT, { error: `must be an integer from 1 to ${THREADS_MAX_LIMIT}` }))
      .optional()
      .describe(`Page size, 1 to ${THREADS_MAX_LIMIT} (default ${THREADS_DEFAULT_LIMIT}).`),
    offset: queryCount(0).optional().describe("Conversations to skip (default 0). Deep offsets cost the entries they skip; a cursor does not."),
    cursor: queryText("")
      .max(CURSOR_MAX_CHARS, { error: CURSOR_REFUSED })
      .optional()
      .transform((text, context) => {
        if (!text) return undefined;
        const cursor = decodeThreadCursor(text);
        if (!cursor) context.addIssue({ code: "custom", message: CURSOR_REFUSED });
        return cursor;
      })
      .describe("Start after the page that gave this next_cursor (instead of offset): as cheap at any depth as the first page."),
  })
  .refine((query) => query.cursor === undefined || query.offset === undefined, {
    error: "give offset or cursor, not both",
    path: ["cursor"],
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
    next_offset: z.number().int().nullable().describe("Offset of the next page; null on the last page and on a page read with a cursor"),
    next_cursor: z.string().nullable().describe("Pass as `cursor` for the next page; null on the last page"),
  })
  .register(namedSchemas, { id: "ThreadList" });
export type ThreadList = z.input<typeof threadListSchema>;
