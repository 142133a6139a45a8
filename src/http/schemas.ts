import { z } from "zod";
import { REQUEST_MODEL_KEY } from "../models/selection.ts";

/**
 * Request and response shapes. The same schemas validate requests and generate the OpenAPI
 * document served at /openapi.json, so the reference cannot drift from the behaviour.
 */
export const apiSchemas = z.registry<{ id: string }>();

const identifier = z.string().min(1).max(256);

export const contentBlockSchema = z
  .discriminatedUnion("type", [
    z.strictObject({ type: z.literal("text"), text: z.string() }),
    z.strictObject({
      type: z.literal("image"),
      url: z
        .string()
        .min(1)
        .regex(/^(https?:\/\/|data:)/i, { error: "must be an http(s) or data: URL" })
        .optional(),
      data: z.string().min(1).optional(),
      mime_type: z.string().regex(/^image\/[\w.+-]+$/).optional(),
    }),
    z.strictObject({ type: z.enum(["audio", "video"]), data: z.string().min(1), mime_type: z.string().min(3) }),
    z.strictObject({
      type: z.literal("file"),
      data: z.string().min(1),
      mime_type: z.string().min(3),
      filename: z.string().min(1).max(255).optional(),
    }),
  ])
  .superRefine((block, ctx) => {
    if (block.type !== "image") return;
    if ((block.url === undefined) === (block.data === undefined)) {
      ctx.addIssue({ code: "custom", message: "an image block needs exactly one of url or data" });
    }
    if (block.data !== undefined && block.mime_type === undefined) {
      ctx.addIssue({ code: "custom", message: "a base64 image block needs mime_type", path: ["mime_type"] });
    }
  })
  .register(apiSchemas, { id: "ContentBlock" });
export type ContentBlock = z.infer<typeof contentBlockSchema>;

export const messageContentSchema = z.union([z.string(), z.array(contentBlockSchema).min(1)]);

/** Keys agent_config may never carry: identity, checkpoint addressing, or LangGraph internals. */
const FORBIDDEN_AGENT_CONFIG_KEYS = new Set([
  "thread_id",
  "user_id",
  "checkpoint_id",
  "checkpoint_ns",
  "checkpoint_map",
  "checkpointer",
  "run_id",
  REQUEST_MODEL_KEY,
]);

const agentConfigSchema = z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
  for (const key of Object.keys(value)) {
    if (FORBIDDEN_AGENT_CONFIG_KEYS.has(key) || key.startsWith("__")) {
      ctx.addIssue({ code: "custom", message: `agent_config may not set "${key}"`, path: [key] });
    }
  }
});

const runFields = {
  input: z.strictObject({ message: messageContentSchema }).describe("Agent input; identity fields are top-level, never here."),
  thread_id: identifier.optional().describe("Public conversation id; omitted on invoke: a new one is created and returned."),
  user_id: identifier.optional().describe("Trusted callers: any user (default AUTH_SERVICE_USER_ID). Token users: omit or their own id."),
  model_config_key: identifier.optional().describe("A MODEL_CONFIGS name; only for agents that support runtime model selection."),
  model_name: identifier.optional().describe("A provider model name, e.g. gpt-4o-mini; same support requirement."),
  model_provider: identifier.optional().describe("openai, anthropic or google; inferred from model_name when omitted."),
  agent_config: agentConfigSchema.optional(),
  recursion_limit: z.number().int().min(1).max(10_000).optional(),
};

export const invokeRequestSchema = z.strictObject(runFields).register(apiSchemas, { id: "InvokeRequest" });
export type InvokeRequest = z.infer<typeof invokeRequestSchema>;

export const streamRequestSchema = z
  .strictObject({
    ...runFields,
    stream_tokens: z.boolean().default(true).describe("true: token events plus messages; false: complete messages only."),
  })
  .register(apiSchemas, { id: "StreamRequest" });
export type StreamRequest = z.infer<typeof streamRequestSchema>;

const resumeFields = {
  thread_id: identifier.describe("The paused conversation."),
  user_id: identifier.optional().describe("Same rules as on invoke."),
  resume: z
    .unknown()
    .refine((v) => v !== undefined && v !== null, { error: "resume is required and may not be null" })
    .describe("The value handed back to the interrupted graph: an answer, or for approvals {decisions: [{type: approve|edit|reject, ...}]}."),
  interrupt_id: identifier.optional().describe("Which pending interrupt to resume; required when several are pending."),
};

export const resumeRequestSchema = z.strictObject(resumeFields).register(apiSchemas, { id: "ResumeRequest" });
export type ResumeRequest = z.infer<typeof resumeRequestSchema>;

export const resumeStreamRequestSchema = z
  .strictObject({
    ...resumeFields,
    stream_tokens: z.boolean().default(true).describe("true: token events plus messages; false: complete messages only."),
  })
  .register(apiSchemas, { id: "ResumeStreamRequest" });

export const chatMessageSchema = z
  .object({
    type: z.string().describe("ai, human, tool, system, or interrupt"),
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
      z.object({ id: z.string().optional(), name: z.string(), args: z.record(z.string(), z.unknown()) }).passthrough(),
    ),
    tool_call_id: z.string().optional(),
    feedback_token: z.string().optional(),
    interrupts: z
      .array(z.object({ id: z.string(), value: z.unknown() }))
      .optional()
      .describe("On type `interrupt`: each pending interrupt's id and value; resume with POST /resume."),
  })
  .register(apiSchemas, { id: "ChatMessage" });
export type ChatMessage = z.infer<typeof chatMessageSchema>;

export const streamEventSchema = z
  .discriminatedUnion("type", [
    z.object({ type: z.literal("token"), content: z.string() }),
    z.object({ type: z.literal("message"), content: chatMessageSchema }),
    z.object({ type: z.literal("error"), content: z.string(), error_code: z.string().optional() }),
  ])
  .register(apiSchemas, { id: "StreamEvent" });
export type StreamEvent = z.infer<typeof streamEventSchema>;

export const errorBodySchema = z
  .object({ detail: z.string(), error_code: z.string().optional() })
  .register(apiSchemas, { id: "Error" });

export const infoResponseSchema = z
  .object({
    agents: z.array(z.object({ key: z.string(), description: z.string() })),
    default_agent: z.string(),
  })
  .register(apiSchemas, { id: "Info" });

export const historyPageSchema = z
  .object({
    messages: z.array(chatMessageSchema),
    total: z.number().int().describe("Messages in the conversation"),
    next_offset: z.number().int().nullable().describe("Offset of the next page; null on the last page"),
  })
  .register(apiSchemas, { id: "HistoryPage" });
export type HistoryPage = z.infer<typeof historyPageSchema>;

const usageMetadataSchema = z
  .object({ input_tokens: z.number().int().min(0), output_tokens: z.number().int().min(0), total_tokens: z.number().int().min(0) })
  .passthrough();

export const messageInputSchema = z
  .discriminatedUnion("type", [
    z.strictObject({ type: z.literal("human"), content: messageContentSchema }),
    z.strictObject({ type: z.literal("system"), content: messageContentSchema }),
    z.strictObject({
      type: z.literal("ai"),
      content: z.union([z.string(), z.array(contentBlockSchema)]),
      usage_metadata: usageMetadataSchema.nullable().optional(),
      response_metadata: z.record(z.string(), z.unknown()).optional(),
    }),
    z.strictObject({ type: z.literal("tool"), content: messageContentSchema, tool_call_id: identifier }),
  ])
  .register(apiSchemas, { id: "MessageInput" });
export type MessageInput = z.infer<typeof messageInputSchema>;

const conversationFields = {
  thread_id: identifier.describe("The conversation (required)."),
  user_id: identifier.optional().describe("The conversation's owner: trusted callers only; token users omit it or name themselves."),
};

export const addMessagesRequestSchema = z
  .strictObject({ ...conversationFields, messages: z.array(messageInputSchema).min(1).max(10_000) })
  .register(apiSchemas, { id: "AddMessagesRequest" });

export const addMessagesResponseSchema = z
  .object({ thread_id: z.string(), added: z.number().int(), total: z.number().int() })
  .register(apiSchemas, { id: "AddMessagesResponse" });

export const clearHistoryRequestSchema = z.strictObject(conversationFields).register(apiSchemas, { id: "ClearHistoryRequest" });

export const clearHistoryResponseSchema = z
  .object({ thread_id: z.string(), cleared: z.literal(true) })
  .register(apiSchemas, { id: "ClearHistoryResponse" });

export const feedbackRequestSchema = z
  .object({
    run_id: z.uuid({ error: "must be the run_id of a run (a UUID)" }),
    key: z.string().min(1).max(256),
    score: z.number().finite(),
    user_id: identifier.optional(),
    feedback_token: z.string().min(1).max(512).optional().describe("The run's proof; required for every principal but the trusted shared secret."),
    comment: z.string().max(10_000).optional(),
  })
  .catchall(z.unknown())
  .describe("Other fields are ordinary metadata; they cannot change the run, user, trace, observation or record id.")
  .register(apiSchemas, { id: "FeedbackRequest" });
export type FeedbackRequest = z.infer<typeof feedbackRequestSchema>;

export const feedbackResponseSchema = z
  .object({
    feedback_id: z.string(),
    run_id: z.string(),
    key: z.string(),
    delivery: z.enum(["delivered", "queued", "skipped"]).describe("skipped: OBSERVABILITY_BACKEND=empty"),
  })
  .register(apiSchemas, { id: "FeedbackResponse" });

/** Render zod issues as one readable line for `detail`. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => (issue.path.length ? `${issue.path.join(".")}: ${issue.message}` : issue.message))
    .join("; ");
}
