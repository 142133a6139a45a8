/**
 * The `configurable` key under which a run (and a history append) tells the checkpoint saver whose
 * conversation it writes: `{ agent_id, thread_id }` with the public thread id; the user is
 * `configurable.user_id`. The message store records it in the conversation list (thread-index.ts).
 * Reserved: `agent_config` may not set it (requests.ts), so it is part of the contract; the runs
 * (runs/prepare.ts) and history appends write it, the message store reads it.
 */
export const CONVERSATION_OWNER_KEY = "agenthost_conversation";

/** The owner a config carries, if it carries a whole one. */
export function conversationOwnerOf(configurable: Record<string, unknown> | undefined): { userId: string; agentId: string; threadId: string } | undefined {
  const owner = configurable?.[CONVERSATION_OWNER_KEY] as { agent_id?: unknown; thread_id?: unknown } | undefined;
  const userId = configurable?.user_id;
  if (typeof userId !== "string" || typeof owner?.agent_id !== "string" || typeof owner.thread_id !== "string") return undefined;
  return { userId, agentId: owner.agent_id, threadId: owner.thread_id };
}

/** The configurable entries that name a conversation's owner. */
export function ownerConfigurable(userId: string, agentId: string, threadId: string): Record<string, unknown> {
  return { user_id: userId, [CONVERSATION_OWNER_KEY]: { agent_id: agentId, thread_id: threadId } };
}
