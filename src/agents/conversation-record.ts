import { ChatMessage, type BaseMessage } from "@langchain/core/messages";
import { createMiddleware } from "langchain";

/**
 * `custom` messages (appended by callers, or written by an agent for its UI) are part of the
 * conversation's record, not of a model prompt: they are stored as LangChain's generic ChatMessage
 * with this role, which no provider accepts. Agents show a model `modelMessages(state.messages)`.
 */
export const CUSTOM_ROLE = "custom";

export function isCustomMessage(message: BaseMessage): boolean {
  // The role first: it rules out almost every message at the cost of one property read.
  return (message as { role?: unknown }).role === CUSTOM_ROLE && ChatMessage.isInstance(message);
}

/** The conversation as a model should see it: every message but `custom` records. */
export function modelMessages(messages: readonly BaseMessage[]): BaseMessage[] {
  return messages.filter((message) => !isCustomMessage(message));
}

/** For agents built with LangChain's `createAgent` (and deepagents): drops `custom` records from each model call. */
export function conversationRecordMiddleware() {
  return createMiddleware({
    name: "AgenthostConversationRecord",
    wrapModelCall: (request, handler) => handler({ ...request, messages: modelMessages(request.messages) }),
  });
}
