import type { RegisteredAgent } from "../agents/agent.ts";
import type { Principal } from "../auth/principal.ts";
import { DatabaseUnavailableError } from "../checkpoints/database-errors.ts";
import type { ConversationStore } from "../checkpoints/conversation-store.ts";
import { titleOf, type ThreadEntry, type ThreadIndex } from "../checkpoints/thread-index.ts";
import { encodeThreadCursor, THREADS_DEFAULT_LIMIT, type ThreadList, type ThreadsQuery } from "../contract/threads.ts";
import type { ConversationService } from "./conversation-service.ts";

/** Messages read to find the title of a conversation the index has no summary of yet. */
const TITLE_SEARCH = 20;

export interface ThreadListDependencies {
  readonly conversations: ConversationService;
  readonly store: ConversationStore;
  readonly threads: ThreadIndex;
}

/**
 * A caller's conversations with an agent, from the conversation list the message store keeps
 * (src/checkpoints/thread-index.ts): one index range per page, from an offset or from a cursor
 * (just after the last conversation of the page before: keyset paging, as cheap at any depth). Only
 * the caller's own: the user is the token's, or the one a trusted caller names; a cursor only says
 * where to start in that list. A conversation bin/maintenance migrated has no summary yet; its
 * first listing reads its head and fills it in, so the cost stays per page.
 */
export class ConversationList {
  constructor(private readonly deps: ThreadListDependencies) {}

  async page(principal: Principal, agent: RegisteredAgent, query: ThreadsQuery): Promise<ThreadList> {
    const userId = this.deps.conversations.userFor(principal, query.user_id);
    const offset = query.offset ?? 0;
    const limit = query.limit ?? THREADS_DEFAULT_LIMIT;
    // One more than the page: whether another page follows, without counting.
    const page = query.cursor
      ? await this.deps.threads.listAfter(userId, agent.name, query.cursor, limit + 1)
      : await this.deps.threads.list(userId, agent.name, offset, limit + 1);
    const more = page.entries.length > limit;
    const entries = await Promise.all(page.entries.slice(0, limit).map((entry) => this.summarised(agent, entry)));
    const last = entries.at(-1);
    return {
      threads: entries.map((entry) => ({
        thread_id: entry.threadId,
        title: entry.title,
        created_at: new Date(entry.createdAt).toISOString(),
        updated_at: new Date(entry.updatedAt).toISOString(),
        message_count: entry.messageCount ?? 0,
      })),
      total: page.total,
      next_offset: more && !query.cursor ? offset + limit : null,
      next_cursor: more && last ? encodeThreadCursor(last) : null,
    };
  }

  /** The entry with its count and title, reading the conversation once if the index lacks them. */
  private async summarised(agent: RegisteredAgent, entry: ThreadEntry): Promise<ThreadEntry> {
    if (entry.messageCount !== null) return entry;
    let head;
    try {
      head = await this.deps.store.readPage(agent, entry.storageKey, 0, TITLE_SEARCH);
    } catch (error) {
      // A conversation that cannot be read back is still listed (history and clear tell the rest).
      if (error instanceof DatabaseUnavailableError) throw error;
      return entry;
    }
    const summary = { messageCount: head.total, title: titleOf(head.messages) };
    await this.deps.threads.fill(entry.storageKey, summary);
    return { ...entry, ...summary };
  }
}
