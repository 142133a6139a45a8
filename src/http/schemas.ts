import { z } from "zod";
import { REQUEST_MODEL_KEY } from "../models/selection.ts";
import { BOUNDS_NOTE, boundedJson, boundedRecord, jsonBoundsProblem } from "./json-bounds.ts";

/**
 * Request and response shapes. The same schemas validate requests and generate the OpenAPI
 * document served at /openapi.json, so the reference cannot drift from the behaviour.
 */
export const apiSchemas = z.registry<{ id: string }>();

const identifier = z.string().min(1).max(256);

/**
 * An optional request field. The original service's clients send every unset field as JSON `null`,
 * so `null` and absence mean the same thing: both parse to `undefined`.
 */
export function optional<T extends z.ZodType>(schema: T) {
  return schema
    .nullish()
    .transform((value): z.output<T> | undefined => value ?? undefined)
    .optional();
}

/** A `user_id` field: as `optional`, and an empty string also counts as omitted. */
const userIdField = optional(z.union([z.literal(""), identifier]).transform((value) => value || undefined));

const httpOrDataUrl = z
  .string()
  .min(1)
  .regex(/^(https?:\/\/|data:)/i, { error: "must be an http(s) or data: URL" });

/** A media block after validation: `data` folded into `base64`, nulls gone. */
export interface MediaBlock {
  type: "image" | "file" | "audio" | "video";
  url?: string | undefined;
  base64?: string | undefined;
  mime_type?: string | undefined;
  filename?: string | undefined;
}

const mediaBlockSchema = z
  .strictObject({
    type: z.enum(["image", "file", "audio", "video"]),
    url: optional(httpOrDataUrl).describe("The media by URL; the provider fetches it, the service never does."),
    base64: optional(z.string().min(1)).describe("The media's bytes, base64-encoded; needs mime_type."),
    data: optional(z.string().min(1)).describe("Alias of base64."),
    mime_type: optional(z.string().regex(/^[\w.+-]+\/[\w.+-]+$/, { error: "must be a MIME type such as image/png" })),
    filename: optional(z.string().min(1).max(255)),
  })
  .superRefine((block, ctx) => {
    if (block.base64 !== undefined && block.data !== undefined) {
      ctx.addIssue({ code: "custom", message: "give the bytes once: base64 (data is its alias)", path: ["data"] });
    }
    const bytes = block.base64 ?? block.data;
    if ((block.url === undefined) === (bytes === undefined)) {
      ctx.addIssue({ code: "custom", message: `a ${block.type} block needs exactly one of url or base64` });
    }
    if (bytes !== undefined && block.mime_type === undefined) {
      ctx.addIssue({ code: "custom", message: `a base64 ${block.type} block needs mime_type`, path: ["mime_type"] });
    }
    if (block.type === "image" && block.mime_type !== undefined && !block.mime_type.startsWith("image/")) {
      ctx.addIssue({ code: "custom", message: "an image block's mime_type must be image/*", path: ["mime_type"] });
    }
  })
  .transform(({ data, base64, ...rest }): MediaBlock => {
    const bytes = base64 ?? data;
    return bytes === undefined ? rest : { ...rest, base64: bytes };
  });

export const contentBlockSchema = z
  .discriminatedUnion("type", [z.strictObject({ type: z.literal("text"), text: z.string() }), mediaBlockSchema])
  .register(apiSchemas, { id: "ContentBlock" });
export type ContentBlock = z.output<typeof contentBlockSchema>;

export const messageContentSchema = z.union([z.string(), z.array(contentBlockSchema).min(1)]);

/**
 * Keys agent_config may never carry: identity, checkpoint addressing, or LangGraph internals. These
 * are the `configurable` keys LangGraph.js and its savers read (checkpoint_id and its older name
 * thread_ts select a checkpoint to run from; checkpoint_ns and checkpoint_map a subgraph's;
 * task_id, assistant_id, graph_id and langgraph_auth_user go into run metadata and server info),
 * ours (thread_id, user_id, agent_id, run_id, the selected model) and every `__`-prefixed internal.
 */
export const FORBIDDEN_AGENT_CONFIG_KEYS: ReadonlySet<string> = new Set([
  "thread_id",
  "thread_ts",
  "user_id",
  "agent_id",
  "checkpoint_id",
  "checkpoint_ns",
  "checkpoint_map",
  "checkpointer",
  "task_id",
  "run_id",
  "assistant_id",
  "graph_id",
  "langgraph_auth_user",
  REQUEST_MODEL_KEY,
]);

const agentConfigSchema = boundedRecord()
  .superRefine((value, ctx) => {
    for (const key of Object.keys(value)) {
      if (FORBIDDEN_AGENT_CONFIG_KEYS.has(key) || key.startsWith("__")) {
        ctx.addIssue({ code: "custom", message: `agent_config may not set "${key}"`, path: [key] });
      }
    }
  })
  .describe(`Extra configurable keys for the agent; identity, checkpoint selectors and \`__\` internals are refused. ${BOUNDS_NOTE}`);

/** Run-body fields that belong at the top level; `input` may not carry them. */
const TOP_LEVEL_FIELDS = ["thread_id", "user_id", "model_name", "model_provider", "model_config_key", "agent_config", "recursion_limit"];

const runFields = {
  input: z
    .object({ message: messageContentSchema })
    .catchall(boundedJson())
    .superRefine((input, ctx) => {
      for (const key of TOP_LEVEL_FIELDS) {
        if (key in input) ctx.addIssue({ code: "custom", message: `${key} belongs at the top level of the body, not in input`, path: [key] });
      }
    })
    .describe(
      "Agent input; identity fields are top-level, never here. Other keys answer a pending interrupt " +
        `(\`resume\` keyed by interrupt id, \`responses\`); a new run ignores them. Each: ${BOUNDS_NOTE}`,
    ),
  thread_id: optional(identifier).describe("Public conversation id; omitted on invoke: a new one is created and returned."),
  user_id: userIdField.describe("Trusted callers: any user (default AUTH_SERVICE_USER_ID). Token users: omit or their own id."),
  model_config_key: optional(identifier).describe("A MODEL_CONFIGS name; only for agents that support runtime model selection."),
  model_name: optional(identifier).describe("A provider model name, e.g. gpt-4o-mini; same support requirement."),
  model_provider: optional(identifier).describe("openai, anthropic, google or fake; alone, it selects that provider's default model."),
  agent_config: optional(agentConfigSchema),
  recursion_limit: optional(z.number().int().min(1).max(10_000)),
};

const streamTokensField = z
  .boolean()
  .nullish()
  .transform((value) => value ?? true)
  .describe("true (default): token events plus messages; false: complete messages only.");

export const invokeRequestSchema = z.strictObject(runFields).register(apiSchemas, { id: "InvokeRequest" });
export type InvokeRequest = z.infer<typeof invokeRequestSchema>;

export const streamRequestSchema = z
  .strictObject({
    ...runFields,
    stream_tokens: streamTokensField,
  })
  .register(apiSchemas, { id: "StreamRequest" });
export type StreamRequest = z.infer<typeof streamRequestSchema>;

const resumeFields = {
  thread_id: identifier.describe("The paused conversation."),
  user_id: userIdField.describe("Same rules as on invoke."),
  resume: boundedJson()
    .refine((v) => v !== undefined && v !== null, { error: "resume is required and may not be null" })
    .describe("The value handed back to the interrupted graph: an answer, or for approvals {decisions: [{type: approve|edit|reject, ...}]}."),
  interrupt_id: optional(identifier).describe("Which pending interrupt to resume; required when several are pending."),
};

export const resumeRequestSchema = z.strictObject(resumeFields).register(apiSchemas, { id: "ResumeRequest" });
export type ResumeRequest = z.infer<typeof resumeRequestSchema>;

export const resumeStreamRequestSchema = z
  .strictObject({
    ...resumeFields,
    stream_tokens: streamTokensField,
  })
  .register(apiSchemas, { id: "ResumeStreamRequest" });

/** The message types a ChatMessage can have; the original service's clients accept no others. */
export const CHAT_MESSAGE_TYPES = ["human", "ai", "tool", "custom"] as const;

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
  .register(apiSchemas, { id: "MessageInput" });
export type MessageInput = z.output<typeof messageInputSchema>;

const conversationFields = {
  thread_id: identifier.describe("The conversation (required)."),
  user_id: userIdField.describe("The conversation's owner: trusted callers only; token users omit it or name themselves."),
};

/** What add and clear answer besides their own fields, as the original service did. */
const conversationOutcomeFields = {
  status: z.literal("success"),
  thread_id: z.string(),
  user_id: z.string().nullable().describe("The user_id as the request sent it (null when omitted)."),
  message: z.string(),
};

export const addMessagesRequestSchema = z
  .strictObject({ ...conversationFields, messages: z.array(messageInputSchema).min(1).max(10_000) })
  .register(apiSchemas, { id: "AddMessagesRequest" });

export const addMessagesResponseSchema = z
  .object({ ...conversationOutcomeFields, added: z.number().int(), total: z.number().int() })
  .register(apiSchemas, { id: "AddMessagesResponse" });

export const clearHistoryRequestSchema = z.strictObject(conversationFields).register(apiSchemas, { id: "ClearHistoryRequest" });

export const clearHistoryResponseSchema = z
  .object({ ...conversationOutcomeFields, cleared: z.literal(true) })
  .register(apiSchemas, { id: "ClearHistoryResponse" });

export const feedbackRequestSchema = z
  .object({
    run_id: z.string().min(1).max(256).describe("The run's run_id."),
    key: z.string().min(1).max(256),
    score: z.number().finite(),
    user_id: userIdField,
    feedback_token: optional(z.string().min(1).max(512)).describe("The run's proof; required for every principal but the trusted shared secret."),
    comment: optional(z.string().max(10_000)),
    kwargs: optional(boundedRecord()).describe(
      `The original client's extra fields: comment and ordinary metadata; a name of the target or identity is refused (422). ${BOUNDS_NOTE}`,
    ),
  })
  .catchall(boundedJson())
  .describe(`Other fields are ordinary metadata; they cannot change the run, user, trace, observation or record id. Each: ${BOUNDS_NOTE}`)
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
