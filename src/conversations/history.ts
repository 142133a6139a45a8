import type { ConversationStore } from "../checkpoints/conversation-store.ts";
import { ownerConfigurable } from "../contract/conversation-owner-key.ts";
import type { MessageInput } from "../contract/messages.ts";
import { HISTORY_MAX_LIMIT } from "../contract/requests.ts";
import type { HistoryPage } from "../contract/responses.ts";
import { pendingInterrupts } from "../runs/interrupts.ts";
import { toChatMessage, toStoredMessage } from "../runs/message-mapping.ts";
import type { Conversation, ConversationService } from "./conversation-service.ts";

/** The default page; the largest is HISTORY_MAX_LIMIT (the query refuses more) unless HISTORY_MAX_PAGE_SIZE lowers it. */
const DEFAULT_PAGE_SIZE = 100;

export interface HistoryDependencies {
  readonly conversations: ConversationService;
  readonly store: ConversationStore;
  /** HISTORY_MAX_PAGE_SIZE, when set. */
  readonly maxPageSize: number | undefined;
  /** CONVERSATION_MAX_MESSAGES: an append may not take a conversation past it. */
  readonly maxMessages: number;
}

/** A conversation's messages without running its agent: read a page, append, clear. */
export class ConversationHistory {
  private readonly maxPage: number;

  constructor(private readonly deps: HistoryDependencies) {
    this.maxPage = deps.maxPageSize ?? HISTORY_MAX_LIMIT;
  }

  /**
   * Messages [offset, offset + limit): the limit defaults to 100 (the query has kept it within 1 to
   * 1000) and one above HISTORY_MAX_PAGE_SIZE is capped to it, as the original service did. Reads take no lock: they see the latest committed
   * checkpoint. Stored messages carry no run id and no feedback proof. The first page (offset 0) of
   * a conversation paused on interrupts also lists them, so a reader can show what the run asks.
   */
  async page(conversation: Conversation, offset: number, limit: number | undefined): Promise<HistoryPage> {
    const size = Math.min(limit ?? DEFAULT_PAGE_SIZE, this.maxPage);
    const { agent, storageKey } = conversation;
    const page = await this.deps.store.readPage(agent, storageKey, offset, size);
    const next = offset + size;
    const answer: HistoryPage = {
      messages: page.messages.map((message) => toChatMessage(message, { threadId: conversation.threadId, runId: null })),
      total: page.total,
      next_offset: next < page.total ? next : null,
    };
    if (offset === 0 && page.total > 0) {
      const pendingWrites = page.pendingWrites ?? (await this.deps.store.head(storageKey)).pendingWrites;
      const pending = pendingInterrupts({ messageCount: page.total, pendingWrites });
      if (pending.length > 0) answer.interrupts = pending.map(({ id, value }) => ({ id, value }));
    }
    return answer;
  }

  /** Append as one new checkpoint, under the lock; answers the conversation's new length. */
  append(conversation: Conversation, messages: readonly MessageInput[], run: AbortController): Promise<number> {
    const stored = messages.map(toStoredMessage);
    return this.deps.conversations.withConversation(conversation, run, () =>
      this.deps.store.append(
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
    return this.deps.conversations.withConversation(conversation, run, () => this.deps.store.clear(conversation.storageKey));
  }
}
