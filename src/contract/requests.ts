import { z } from "zod";
import { CONVERSATION_OWNER_KEY } from "./conversation-owner-key.ts";
import { REQUEST_MODEL_KEY } from "./request-model-key.ts";
import { BOUNDS_NOTE, boundedJson, boundedRecord } from "./json-bounds.ts";
import { identifier, optional, userIdField } from "./fields.ts";
import { messageContentSchema, messageInputSchema } from "./messages.ts";
import { namedSchemas } from "./named-schemas.ts";

/** What a caller asks of a conversation: run, resume, read, append, clear, and feedback on a run. */

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
  CONVERSATION_OWNER_KEY,
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

export const invokeRequestSchema = z.strictObject(runFields).register(namedSchemas, { id: "InvokeRequest" });
export type InvokeRequest = z.infer<typeof invokeRequestSchema>;

export const streamRequestSchema = z
  .strictObject({
    ...runFields,
    stream_tokens: streamTokensField,
    stream_resumable: z
      .boolean()
      .nullish()
      .transform((value) => value ?? false)
      .describe(
        "true: every event gets a sequence number (SSE `id:`, JSON Lines `seq`), the run goes on if the client disconnects " +
          "(within REQUEST_TIMEOUT), and GET /runs/{run_id}/stream replays what was missed (for STREAM_RESUME_TTL seconds after the run ends).",
      ),
  })
  .register(namedSchemas, { id: "StreamRequest" });
export type StreamRequest = z.infer<typeof streamRequestSchema>;

const resumeFields = {
  thread_id: identifier.describe("The paused conversation."),
  user_id: userIdField.describe("Same rules as on invoke."),
  resume: boundedJson()
    .refine((v) => v !== undefined && v !== null, { error: "resume is required and may not be null" })
    .describe("The value handed back to the interrupted graph: an answer, or for approvals {decisions: [{type: approve|edit|reject, ...}]}."),
  interrupt_id: optional(identifier).describe("Which pending interrupt to resume; required when several are pending."),
};

export const resumeRequestSchema = z.strictObject(resumeFields).register(namedSchemas, { id: "ResumeRequest" });
export type ResumeRequest = z.infer<typeof resumeRequestSchema>;

export const resumeStreamRequestSchema = z
  .strictObject({
    ...resumeFields,
    stream_tokens: streamTokensField,
  })
  .register(namedSchemas, { id: "ResumeStreamRequest" });

const conversationFields = {
  thread_id: identifier.describe("The conversation (required)."),
  user_id: userIdField.describe("The conversation's owner: trusted callers only; token users omit it or name themselves."),
};

export const addMessagesRequestSchema = z
  .strictObject({ ...conversationFields, messages: z.array(messageInputSchema).min(1).max(10_000) })
  .register(namedSchemas, { id: "AddMessagesRequest" });
export type AddMessagesRequest = z.output<typeof addMessagesRequestSchema>;

export const clearHistoryRequestSchema = z.strictObject(conversationFields).register(namedSchemas, { id: "ClearHistoryRequest" });
export type ClearHistoryRequest = z.output<typeof clearHistoryRequestSchema>;

/** One query parameter's text: given once (a repeated parameter arrives as a list). */
export function queryText(whenMissing: string) {
  return z.string({ error: (issue) => (issue.input === undefined ? whenMissing : "give it once, as a plain value") });
}

const THREAD_REQUIRED = "required; a user_id alone does not select a conversation";

/** A whole number in a query: up to seven digits, at least `min`. */
export function queryCount(min: number) {
  const rule = `must be an integer of at least ${min}`;
  return queryText(rule)
    .regex(/^\d{1,7}$/, { error: rule })
    .transform(Number)
    .pipe(z.number().min(min, { error: rule }));
}

/** The largest history page a caller may ask for; HISTORY_MAX_PAGE_SIZE may lower what it gets. */
export const HISTORY_MAX_LIMIT = 1000;

/**
 * A history read: `thread_id` is required (a user id alone selects nothing); an empty user_id counts
 * as omitted; limit is 1 to 1000, as the spec says (HISTORY_MAX_PAGE_SIZE then caps it silently, as
 * the original service did); offset at least 0. Other parameters are ignored.
 */
export const historyQuerySchema = z.object({
  thread_id: queryText(THREAD_REQUIRED)
    .min(1, { error: THREAD_REQUIRED })
    .max(256, { error: "at most 256 characters" })
    .describe("The conversation; a user_id alone selects nothing."),
  user_id: queryText("")
    .max(256, { error: "at most 256 characters" })
    .optional()
    .transform((value) => value || undefined)
    .describe("Trusted callers: any user. Token users: omit or their own id."),
  limit: queryCount(1)
    .pipe(z.number().max(HISTORY_MAX_LIMIT, { error: `must be an integer from 1 to ${HISTORY_MAX_LIMIT}` }))
    .optional()
    .describe(`Page size, 1 to ${HISTORY_MAX_LIMIT} (default 100); one above HISTORY_MAX_PAGE_SIZE, when set, is capped to it.`),
  offset: queryCount(0).optional().describe("Messages to skip (default 0)."),
});
export type HistoryQuery = z.output<typeof historyQuerySchema>;

export const feedbackRequestSchema = z
  .object({
    run_id: z.string().min(1).max(256).describe("The run's run_id."),
    key: z.string().min(1).max(256),
    score: z.number().finite(),
    user_id: userIdField,
    feedback_token: optional(z.string().min(1).max(512)).describe("The run's proof; required for every principal but the trusted shared secret."),
    comment: optional(z.string().max(10_000)),
    kwargs: optional(boundedRecord()).describe(
      `The original client's extra fields: comment and ordinary metadata; a name of the target or identity is refused. ${BOUNDS_NOTE}`,
    ),
  })
  .catchall(boundedJson())
  .describe(`Other fields are ordinary metadata; they cannot change the run, user, trace, observation or record id. Each: ${BOUNDS_NOTE}`)
  .register(namedSchemas, { id: "FeedbackRequest" });
export type FeedbackRequest = z.infer<typeof feedbackRequestSchema>;
