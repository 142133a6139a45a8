import type { BaseMessage } from "@langchain/core/messages";
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import type { ChatMessage, ContentBlock } from "../http/schemas.ts";
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
 * A stored or streamed LangChain message as the API's ChatMessage. Refusals are kept: when the
 * provider returns empty content with a refusal, the refusal text becomes the content and
 * response_metadata.refusal is set.
 */
export function toChatMessage(message: BaseMessage, context: MessageContext): ChatMessage {
  const type = message.getType();
  const responseMetadata = { ...record(message.response_metadata) };
  let content: ChatMessage["content"] = typeof message.content === "string" ? message.content : toApiBlocks(message.content);

  if (type === "ai") normalizeCompletion(responseMetadata, record(message.additional_kwargs), message.text);
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
    out.tool_calls = (message.tool_calls ?? []).map((call) => ({ id: call.id, name: call.name, args: call.args }));
  }
  if (ToolMessage.isInstance(message)) out.tool_call_id = message.tool_call_id;
  return out;
}

/** The message the agent receives for `input.message`: a string, or standard content blocks. */
export function humanMessageFrom(content: string | ContentBlock[]): HumanMessage {
  if (typeof content === "string") return new HumanMessage({ content });
  return new HumanMessage({
    content: toLangChainBlocks(content) as HumanMessage["content"],
    response_metadata: { ...STANDARD_CONTENT_METADATA },
  });
}
