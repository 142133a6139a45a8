import { ownerConfigurable } from "../checkpoints/conversation-owner-key.ts";
import { appendMessages, clearHistory, readHistoryPage } from "../checkpoints/history.ts";
import type { MessageInput } from "../contract/messages.ts";
import type { HistoryPage } from "../contract/responses.ts";
import { toChatMessage, toStoredMessage } from "../runs/message-mapping.ts";
import type { Conversation, ConversationService } from "./conversation-service.ts";

/** The default page, and the largest a caller may ask for unless HISTORY_MAX_PAGE_SIZE lowers it. */
const DEFAULT_PAGE_SIZE = 100;
const MAX_PAGE_SIZE = 1000;

export interface HistoryDependencies {
  readonly conversations: ConversationService;
  /** HISTORY_MAX_PAGE_SIZE, when set. */
  readonly maxPageSize: number | undefined;
  /** CONVERSATION_MAX_MESSAGES: an append may not take a conversation past it. */
  readonly maxMessages: number;
}

/** A conversation's messages without running its agent: read a page, append, clear. */
export class ConversationHistory {
  private readonly maxPage: number;

  constructor(private readonly deps: HistoryDependencies) {
    this.maxPage = deps.maxPageSize ?? MAX_PAGE_SIZE;
  }

  /**
   * Messages [offset, offset + limit): the limit defaults to 100 and a larger one is capped to the
   * maximum page, as the original service did. Reads take no lock: they see the latest committed
   * checkpoint. Stored messages carry no run id and no feedback proof.
   */
  async page(conversation: Conversation, offset: number, limit: number | undefined): Promise<HistoryPage> {
    const size = Math.min(limit ?? DEFAULT_PAGE_SIZE, this.maxPage);
    const page = await readHistoryPage(conversation.agent, conversation.storageKey, offset, size);
    const next = offset + size;
    return {
      messages: page.messages.map((message) => toChatMessage(message, { threadId: conversation.threadId, runId: null })),
      total: page.total,
      next_offset: next < page.total ? next : null,
    };
  }

  /** Append as one new checkpoint, under the lock; answers the conversation's new length. */
  append(conversation: Conversation, messages: readonly MessageInput[], run: AbortController): Promise<number> {
    const stored = messages.map(toStoredMessage);
    return this.deps.conversations.withConversation(conversation, run, () =>
      appendMessages(
        conversation.agent,
        conversation.storageKey,
        stored,
        this.deps.maxMessages,
        ownerConfigurable(conversation.userId, conversation.agent.name, conversation.threadId),
      ),
    );
  }

  /** Delete everything stored for the conversation, under the lock. */
  clear(conversation: Conversation, run: AbortController): Promise<void> {
    return this.deps.conversations.withConversation(conversation, run, () => clearHistory(conversation.agent, conversation.storageKey));
  }
}
