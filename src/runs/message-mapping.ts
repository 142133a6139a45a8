import { randomUUID } from "node:crypto";
import type { BaseMessage } from "@langchain/core/messages";
import { AIMessage, ChatMessage as LangChainChatMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { CUSTOM_ROLE, isCustomMessage } from "../agents/conversation-record.ts";
import type { ChatMessage, ContentBlock, MessageInput } from "../contract/messages.ts";
import { STANDARD_CONTENT_METADATA, toApiBlocks, toLangChainBlocks } from "../models/content-blocks.ts";
import { normalizeCompletion } from "../models/finish-reason.ts";

export interface MessageContext {
  readonly threadId: string;
  readonly runId: string | null;
}

function record(value: unknown): Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/**
 * The ChatMessage type of a stored message, and for a message of another kind (system, developer,
 * a generic chat role) the custom_data that names what it was. The original service's clients
 * accept only human, ai, tool and custom, so other kinds are shown as custom.
 */
function typeOf(message: BaseMessage): { type: ChatMessage["type"]; customData?: Record<string, unknown> } {
  const type: string = message.getType();
  if (type === "human" || type === "ai" || type === "tool") return { type };
  if (isCustomMessage(message)) return { type: "custom", customData: record(message.additional_kwargs.custom_data) };
  const kind = LangChainChatMessage.isInstance(message) ? message.role : type;
  return { type: "custom", customData: { message_type: kind } };
}

/**
 * A stored or streamed LangChain message as the API's ChatMessage. Refusals are kept: when the
 * provider returns empty content with a refusal, the refusal text becomes the content and
 * response_metadata.refusal is set.
 */
export function toChatMessage(message: BaseMessage, context: MessageContext): ChatMessage {
  const { type, customData } = typeOf(message);
  const responseMetadata = { ...record(message.response_metadata) };
  let content: ChatMessage["content"] = typeof message.content === "string" ? message.content : toApiBlocks(message.content);

  if (type === "ai") normalizeCompletion(responseMetadata, record(message.additional_kwargs), () => message.text);
  const refusal = responseMetadata.refusal ?? record(message.additional_kwargs).refusal;
  if (typeof refusal === "string" && refusal) {
    responseMetadata.refusal = refusal;
    if (content === "" || (Array.isArray(content) && content.length === 0)) content = refusal;
  }

  const out: ChatMessage = {
    type,
    content,
    thread_id: context.threadId,
    run_id: context.runId,
    usage_metadata: null,
    response_metadata: responseMetadata,
    tool_calls: [],
  };
  if (AIMessage.isInstance(message)) {
    out.usage_metadata = message.usage_metadata ? { ...message.usage_metadata } : null;
    out.tool_calls = (message.tool_calls ?? []).map((call) => ({ id: call.id ?? null, name: call.name, args: call.args, type: "tool_call" }));
  }
  if (ToolMessage.isInstance(message)) out.tool_call_id = message.tool_call_id;
  if (customData) out.custom_data = customData;
  return out;
}

function storedContent(content: MessageInput["content"]): string | Array<Record<string, unknown>> {
  return typeof content === "string" ? content : toLangChainBlocks(content);
}

/** An appended MessageInput as the LangChain message stored in the conversation. */
export function toStoredMessage(input: MessageInput): BaseMessage {
  const id = randomUUID();
  const content = storedContent(input.content);
  const response_metadata = {
    ...(typeof input.content === "string" ? {} : STANDARD_CONTENT_METADATA),
    ...input.response_metadata,
  };
  switch (input.type) {
    case "human":
      return new HumanMessage({ id, content: content as HumanMessage["content"], response_metadata });
    case "tool":
      return new ToolMessage({ id, content: content as ToolMessage["content"], tool_call_id: input.tool_call_id!, response_metadata });
    case "custom":
      // Its data rides in additional_kwargs; agents keep it out of model prompts (modelMessages).
      return new LangChainChatMessage({
        id,
        role: CUSTOM_ROLE,
        content: content as LangChainChatMessage["content"],
        additional_kwargs: { custom_data: input.custom_data ?? {} },
        response_metadata,
      });
    case "ai":
      return new AIMessage({
        id,
        content: content as AIMessage["content"],
        tool_calls: (input.tool_calls ?? []).map((call) => ({ id: call.id, name: call.name, args: call.args, type: "tool_call" as const })),
        ...(input.usage_metadata ? { usage_metadata: input.usage_metadata } : {}),
        response_metadata,
      });
  }
}

/** The message the agent receives for `input.message`: a string, or standard content blocks. */
export function humanMessageFrom(content: string | ContentBlock[]): HumanMessage {
  if (typeof content === "string") return new HumanMessage({ content });
  return new HumanMessage({
    content: toLangChainBlocks(content) as HumanMessage["content"],
    response_metadata: { ...STANDARD_CONTENT_METADATA },
  });
}
