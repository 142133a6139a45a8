import {
  AIMessageChunk,
  coerceMessageLikeToMessage,
  isAIMessage,
  isBaseMessage,
  ToolMessage,
  type BaseMessage,
} from "@langchain/core/messages";
import { ServiceError } from "../errors/service-error.ts";

/**
 * Graph state as the LangGraph Platform API puts it on the wire, and back: LangChain messages become
 * the dicts LangGraph's SDKs read (`type`, `content`, `id`, and each kind's own fields); everything
 * else is plain JSON already. Incoming messages (dicts by `type` or `role`, as the SDK and
 * Agent Chat UI send them) become LangChain messages before they reach a graph.
 */

/**
 * A message as the SDK reads it, typed by its kind (`ai` for a streamed chunk too, as LangGraph's
 * JS server writes it; the SDK also reads `AIMessageChunk`). A chunk carries its tool call chunks.
 */
export function messageDict(message: BaseMessage): Record<string, unknown> {
  const dict: Record<string, unknown> = {
    type: message.getType(),
    content: message.content,
    id: message.id ?? null,
    name: message.name ?? null,
    additional_kwargs: message.additional_kwargs ?? {},
    response_metadata: message.response_metadata ?? {},
  };
  if (isAIMessage(message)) {
    dict.tool_calls = message.tool_calls ?? [];
    dict.invalid_tool_calls = message.invalid_tool_calls ?? [];
    dict.usage_metadata = message.usage_metadata ?? null;
    if (message instanceof AIMessageChunk) dict.tool_call_chunks = message.tool_call_chunks ?? [];
  }
  if (message instanceof ToolMessage) {
    dict.tool_call_id = message.tool_call_id;
    dict.status = message.status ?? "success";
    if (message.artifact !== undefined) dict.artifact = message.artifact;
  }
  return dict;
}

/** Any state value with its messages (at any depth) as dicts; other objects pass through as JSON would see them. */
export function wireValue(value: unknown): unknown {
  if (isBaseMessage(value)) return messageDict(value);
  if (Array.isArray(value)) return value.map(wireValue);
  if (value === null || typeof value !== "object") return value;
  if (value instanceof Date) return value.toISOString();
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null && typeof (value as { toJSON?: unknown }).toJSON === "function") return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) out[key] = wireValue(item);
  return out;
}

/** The message kinds a caller may send, by every name LangChain and the SDKs use, as LangChain's own `type`. */
const KINDS: Readonly<Record<string, string>> = {
  human: "human",
  user: "human",
  HumanMessage: "human",
  HumanMessageChunk: "human",
  ai: "ai",
  assistant: "ai",
  AIMessage: "ai",
  AIMessageChunk: "ai",
  system: "system",
  SystemMessage: "system",
  developer: "developer",
  tool: "tool",
  ToolMessage: "tool",
  ToolMessageChunk: "tool",
};

/**
 * A message the caller sent (a dict by `type` or `role`, or a string: a human message) as a LangChain
 * message. Anything else is a validation failure naming where it is.
 */
export function messageFromWire(value: unknown, where: string): BaseMessage {
  if (typeof value === "string") return coerceMessageLikeToMessage(value);
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ServiceError("validation_failed", { detail: `${where} must be a message object or a string.` });
  }
  const { type, role, ...fields } = value as { type?: unknown; role?: unknown } & Record<string, unknown>;
  const named = typeof type === "string" ? type : role;
  const kind = typeof named === "string" && Object.hasOwn(KINDS, named) ? KINDS[named] : undefined;
  if (kind === undefined) {
    throw new ServiceError("validation_failed", { detail: `${where} needs a "type" or "role" of human, ai, system, developer or tool.` });
  }
  try {
    return coerceMessageLikeToMessage({ ...fields, type: kind } as Parameters<typeof coerceMessageLikeToMessage>[0]);
  } catch {
    throw new ServiceError("validation_failed", { detail: `${where} is not a valid ${kind} message (a tool message needs tool_call_id).` });
  }
}

/**
 * A run's or an update's `input` with its `messages` (when present) as LangChain messages: a list,
 * or one message. Other keys are the graph's business and pass as sent.
 */
export function stateFromWire(input: Record<string, unknown>, where: string): Record<string, unknown> {
  if (!("messages" in input)) return input;
  const { messages } = input;
  const list = Array.isArray(messages) ? messages : [messages];
  return { ...input, messages: list.map((message, i) => messageFromWire(message, `${where}.messages[${i}]`)) };
}
