import { z } from "zod";
import { contentBlockSchema } from "./content-blocks.ts";
import { BOUNDS_NOTE, boundedRecord, jsonBoundsProblem } from "./json-bounds.ts";
import { identifier, optional } from "./fields.ts";
import { namedSchemas } from "./named-schemas.ts";

/** Messages as the service's callers send and receive them, and the events of a streamed run. */

export { contentBlockSchema, messageContentSchema, type ContentBlock, type MediaBlock } from "./content-blocks.ts";

/** The message types a ChatMessage can have; the original service's clients accept no others. */
const CHAT_MESSAGE_TYPES = ["human", "ai", "tool", "custom"] as const;

export const chatMessageSchema = z
  .object({
    type: z.enum(CHAT_MESSAGE_TYPES).describe("ai (answers, and a run paused by an interrupt), human, tool, or custom"),
    content: z.union([z.string(), z.array(z.record(z.string(), z.unknown()))]),
    thread_id: z.string(),
    run_id: z.string().nullable(),
    usage_metadata: z
      .object({ input_tokens: z.number(), output_tokens: z.number(), total_tokens: z.number() })
      .passthrough()
      .nullable()
      .describe("Token counts of this model message; null means unavailable, not zero."),
    response_metadata: z.record(z.string(), z.unknown()),
    tool_calls: z.array(
      z
        .object({ id: z.string().nullable(), name: z.string(), args: z.record(z.string(), z.unknown()), type: z.literal("tool_call") })
        .passthrough(),
    ),
    tool_call_id: z.string().optional(),
    custom_data: z
      .record(z.string(), z.unknown())
      .optional()
      .describe(
        "custom messages: their data. A run paused by interrupts: {interrupts: [{id, value}]} (answer with /resume, or with " +
          "the next run's input). A stored message of another kind (e.g. system): {message_type}.",
      ),
    feedback_token: z.string().optional(),
  })
  .register(namedSchemas, { id: "ChatMessage" });
export type ChatMessage = z.infer<typeof chatMessageSchema>;

export const streamEventSchema = z
  .discriminatedUnion("type", [
    z.object({ type: z.literal("token"), content: z.string() }),
    z.object({ type: z.literal("message"), content: chatMessageSchema }),
    z.object({ type: z.literal("error"), content: z.string(), error_code: z.string().optional() }),
  ])
  .register(namedSchemas, { id: "StreamEvent" });
export type StreamEvent = z.infer<typeof streamEventSchema>;

const usageMetadataSchema = z
  .object({ input_tokens: z.number().int().min(0), output_tokens: z.number().int().min(0), total_tokens: z.number().int().min(0) })
  .passthrough()
  .superRefine((value, ctx) => {
    const problem = jsonBoundsProblem(value);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });

const toolCallInputSchema = z.strictObject({
  name: identifier,
  args: boundedRecord().describe(BOUNDS_NOTE),
  id: optional(identifier),
  type: optional(z.literal("tool_call")),
});

/** The message types an append accepts. */
const MESSAGE_INPUT_TYPES = ["human", "ai", "tool", "custom"] as const;

/**
 * One message to append, in the original client's full shape: every field but type and content is
 * sent (null or empty when unused). A field that only another type uses must be null or empty.
 */
export const messageInputSchema = z
  .strictObject({
    type: z.enum(MESSAGE_INPUT_TYPES, {
      error: (issue) =>
        issue.input === "system"
          ? "system messages cannot be imported: an agent's instructions are part of the agent, not the conversation"
          : `must be one of ${MESSAGE_INPUT_TYPES.join(", ")}`,
    }),
    content: z.union([z.string(), z.array(contentBlockSchema)]),
    custom_data: optional(boundedRecord()).describe(`custom messages only. ${BOUNDS_NOTE}`),
    tool_call_id: optional(identifier).describe("tool messages only (required there)"),
    tool_calls: optional(z.array(toolCallInputSchema).max(1000)).describe("ai messages only"),
    usage_metadata: optional(usageMetadataSchema).describe(`ai messages only. ${BOUNDS_NOTE}`),
    response_metadata: optional(boundedRecord()).describe(BOUNDS_NOTE),
  })
  .superRefine((message, ctx) => {
    const misplaced = (field: string, owner: string) =>
      ctx.addIssue({ code: "custom", message: `only ${owner} messages carry ${field}; send null or leave it out`, path: [field] });
    if (message.type === "tool" && message.tool_call_id === undefined) {
      ctx.addIssue({ code: "custom", message: "a tool message needs the tool_call_id it answers", path: ["tool_call_id"] });
    }
    if (message.type !== "tool" && message.tool_call_id !== undefined) misplaced("tool_call_id", "tool");
    if (message.type !== "ai" && message.tool_calls?.length) misplaced("tool_calls", "ai");
    if (message.type !== "ai" && message.usage_metadata !== undefined) misplaced("usage_metadata", "ai");
    if (message.type !== "custom" && message.custom_data !== undefined && Object.keys(message.custom_data).length) {
      misplaced("custom_data", "custom");
    }
  })
  .register(namedSchemas, { id: "MessageInput" });
export type MessageInput = z.output<typeof messageInputSchema>;

