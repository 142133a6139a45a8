/**
 * Request and response shapes of the agenthost HTTP API, as the client sees them. Field names are the
 * wire names (snake_case), so a value read from one response can be passed to the next request as is.
 * Nothing here is shared with the server code: the client must stand alone.
 */

export interface TextBlock {
  type: "text";
  text: string;
}

/**
 * Media (image, file, audio, video) by an absolute URL, as base64 bytes (then `mime_type` is
 * required by the service), or by a file already uploaded to the model's provider (`file_id`).
 * `data` is accepted as an alias of `base64`, `id` of `file_id`; LangChain's `source_type` blocks
 * and Anthropic's `source` object are accepted too. Messages read back use `url`, `base64` or
 * `file_id`. `path` and relative URLs are refused: the service never reads its own files for a caller.
 */
export interface MediaBlock {
  type: "image" | "file" | "audio" | "video" | (string & {});
  url?: string;
  base64?: string;
  file_id?: string;
  mime_type?: string;
  filename?: string;
  /** LangChain's data block form: "url" with url, "base64" with data and mime_type, "id" with id. */
  source_type?: "url" | "base64" | "id";
  /** Anthropic's source object. */
  source?: { type: "base64"; media_type: string; data: string } | { type: "url"; url: string } | { type: "file"; file_id: string };
  /** LangChain's block metadata; `metadata.filename` is the file name. */
  metadata?: Record<string, unknown>;
  [key: string]: unknown;
}

export type ContentBlock = TextBlock | MediaBlock;

/** `input.message`: a string or a list of content blocks. */
export type MessageContent = string | ContentBlock[];

/** One tool call on an intermediate assistant message (LangChain's shape); `id` is null when the model gave none. */
export interface ToolCall {
  name: string;
  args: Record<string, unknown>;
  id: string | null;
  type?: "tool_call";
  [key: string]: unknown;
}

/** One interrupt a paused run waits on: its id and the value the graph paused with. */
export interface PendingInterrupt {
  id: string;
  value: unknown;
}

/** Token counts of the returned model message only; `null` on a message means "unavailable", not zero. */
export interface UsageMetadata {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  [key: string]: unknown;
}

export interface ChatMessage {
  /** `ai`, `human`, `tool` or `custom` (stored messages of other kinds read back as `custom`). */
  type: "ai" | "human" | "tool" | "custom";
  content: string | ContentBlock[];
  thread_id: string;
  /** One agent run; the id feedback refers to. Not a conversation id. */
  run_id?: string | null;
  usage_metadata?: UsageMetadata | null;
  response_metadata?: Record<string, unknown>;
  tool_calls?: ToolCall[];
  /** Proof for feedback on this run, returned to token users. The client never stores it. */
  feedback_token?: string;
  tool_call_id?: string;
  /**
   * A custom message's data; on a run paused by interrupts, `{interrupts: PendingInterrupt[]}` (read it
   * with `pendingInterrupts`); on a stored message of another kind (system), `{message_type}`.
   */
  custom_data?: Record<string, unknown>;
  [key: string]: unknown;
}

/** What a stream yields: a token's text, or a complete message. */
export type StreamItem = string | ChatMessage;

export interface AgentInfo {
  key: string;
  description: string;
  [key: string]: unknown;
}

export interface ServiceInfo {
  agents: AgentInfo[];
  default_agent: string;
  /** What one request may carry (agenthost 0.10+ with the chat page's additions). */
  limits?: { max_attachments?: number };
  [key: string]: unknown;
}

export interface HistoryPage {
  messages: ChatMessage[];
  total: number;
  /** Offset of the next page; `null` on the last page. */
  next_offset: number | null;
  /** On the first page (offset 0) of a conversation paused on interrupts: what the run waits for. */
  interrupts?: PendingInterrupt[];
}

/** One message to append to a conversation without running the agent. */
export interface MessageInput {
  type: "ai" | "human" | "tool" | "custom";
  content: MessageContent;
  /** ai messages: the tool calls the tool messages that follow answer. */
  tool_calls?: Array<Omit<ToolCall, "id"> & { id?: string | null }>;
  /** tool messages: the call they answer (required there). */
  tool_call_id?: string;
  /** custom messages: their data. */
  custom_data?: Record<string, unknown>;
  usage_metadata?: UsageMetadata | null;
  response_metadata?: Record<string, unknown>;
}

/** Options every call accepts. */
export interface CallOptions {
  /** Cancels the call (or the stream) at any point; the call then rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Use this agent for this call instead of the client's agent. */
  agent?: string;
}

/** Fields of the invoke body besides `input.message`. */
export interface RunOptions extends CallOptions {
  /** Omit to start a new conversation; the service creates the id and returns it on the message. */
  thread_id?: string;
  user_id?: string;
  model_config_key?: string;
  model_name?: string;
  model_provider?: string;
  /** Must not carry identity or checkpoint fields; the service rejects them (422). */
  agent_config?: Record<string, unknown>;
  recursion_limit?: number;
  /**
   * Sent as `input.resume`: answers to a paused conversation's interrupts, keyed by interrupt id
   * (`pendingInterrupts`). The service answers the interrupts it names only; the others stay pending.
   * A run on a conversation that is not paused ignores it.
   */
  resume?: Record<string, unknown>;
}

export interface StreamOptions extends RunOptions {
  /** true (default): token events plus messages; false: complete messages only. */
  stream_tokens?: boolean;
  /**
   * true: ask for a resumable stream (`stream_resumable`); when the connection drops, the client picks
   * the stream up again where it left off (GET /runs/{run_id}/stream), up to `resumeAttempts` times in a
   * row. The service keeps running the run meanwhile. Without a `thread_id` the client makes one up, as
   * resuming names the conversation.
   */
  resumable?: boolean;
  /** Reconnections in a row a resumable stream may make before it reports the failure (default 5). */
  resumeAttempts?: number;
}

/** Stop the run holding a conversation (`POST /cancel`). */
export interface CancelRequest {
  thread_id: string;
  /** Trusted callers: the conversation's owner. */
  user_id?: string;
}

export interface CancelResult {
  thread_id: string;
  /** true: a run held the conversation and was stopped; false: nothing was running. */
  cancelled: boolean;
  /** The stopped run's id; null when nothing was running. */
  run_id: string | null;
}

export interface HistoryQuery {
  thread_id: string;
  user_id?: string;
  /** 1..1000; the service's default page is 100. */
  limit?: number;
  offset?: number;
}

export interface AddMessagesRequest {
  thread_id: string;
  user_id?: string;
  messages: MessageInput[];
}

export interface ClearHistoryRequest {
  thread_id: string;
  user_id?: string;
}

export interface FeedbackRequest {
  run_id: string;
  key: string;
  score: number;
  user_id?: string;
  /** Required for every principal except the shared secret in trusted mode. */
  feedback_token?: string;
  comment?: string;
  /** Ordinary metadata; it cannot override the target run, user or trace. */
  [key: string]: unknown;
}

export interface ResumeRequest {
  thread_id: string;
  user_id?: string;
  /** The value handed back to the interrupted graph (an approval, an answer, ...). */
  resume: unknown;
  interrupt_id?: string;
}

/** A JSON object the service returned whose shape the spec does not fix. */
export type JsonObject = Record<string, unknown>;

/** Options of the calls the service can answer once per key: invoke, addMessages, createFeedback. */
export interface IdempotentCallOptions extends CallOptions {
  /**
   * Sent as `Idempotency-Key`: the same key and body again (a retry) gets the first answer replayed
   * instead of a second run. With the retry policy on, the client makes one when this is omitted.
   */
  idempotencyKey?: string;
}

/** invoke's options: the run's fields and an idempotency key. */
export interface InvokeOptions extends RunOptions, IdempotentCallOptions {}

/** `GET /{agent}/threads`: one page of the caller's conversations with the agent. */
export interface ThreadListQuery {
  /** Trusted callers: whose conversations (default the service user). Token users: omit or their own id. */
  user_id?: string;
  /** 1..100, default 20. */
  limit?: number;
  offset?: number;
}

export interface ThreadSummary {
  thread_id: string;
  /** The start of the first human message (at most 80 characters); null when there is none. */
  title: string | null;
  /** ISO 8601, UTC. */
  created_at: string;
  updated_at: string;
  message_count: number;
}

export interface ThreadListPage {
  /** Most recently updated first. */
  threads: ThreadSummary[];
  total: number;
  /** Offset of the next page; `null` on the last page. */
  next_offset: number | null;
  /** On the first page (offset 0) of a conversation paused on interrupts: what the run waits for. */
  interrupts?: PendingInterrupt[];
}
