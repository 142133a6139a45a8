import { isBaseMessage } from "@langchain/core/messages";
import type { ThreadCursor } from "../contract/threads.ts";

/**
 * The conversation list: one row per conversation, keyed by its storage key like every other table
 * of the service, with its owner (user, agent, public thread id), title, message count and times.
 * The message store writes it with each checkpoint that changes the conversation's messages, and
 * deletes it with the conversation, so a list page reads one index range: O(page), not
 * O(conversations). bin/maintenance moves and deletes it with its thread like the saver's tables;
 * a migrated conversation gets a row whose count and title are filled in on its first listing.
 */
export const THREAD_TABLE = "agenthost_threads";

/** The longest title: the start of the conversation's first human message. */
export const TITLE_MAX_CHARS = 80;

/** Whose a conversation is, as the conversation service resolved it (never derived from the key). */
export interface ThreadOwner {
  readonly userId: string;
  readonly agentId: string;
  /** The public thread id the caller sees. */
  readonly threadId: string;
}

/** What the list shows of a conversation's messages. */
export interface ThreadSummary {
  readonly messageCount: number;
  readonly title: string | null;
}

/** One conversation as the index holds it; times in milliseconds since the epoch. */
export interface ThreadEntry {
  readonly threadId: string;
  readonly storageKey: string;
  readonly title: string | null;
  /** Null for a row written by bin/maintenance, until its first listing fills it in. */
  readonly messageCount: number | null;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface ThreadPage {
  readonly entries: ThreadEntry[];
  readonly total: number;
}

/** A place in a user's list: a conversation's last update and public thread id (the list's order), as a cursor names it. */
export type ThreadPosition = ThreadCursor;

export interface ThreadIndex {
  /** Record that the conversation's messages changed now: create its row or update it. */
  touch(storageKey: string, owner: ThreadOwner, summary: ThreadSummary, now: number): Promise<void>;
  /** A user's conversations with an agent, most recently updated first. */
  list(userId: string, agentId: string, offset: number, limit: number): Promise<ThreadPage>;
  /**
   * The same list from just after `after` (keyset paging): one index range from that place, so a
   * page deep in a long list costs what the first one does, where an offset walks the skipped entries.
   */
  listAfter(userId: string, agentId: string, after: ThreadPosition, limit: number): Promise<ThreadPage>;
  /** Set the summary of a row that has none yet (a migrated conversation); a row with one is left alone. */
  fill(storageKey: string, summary: ThreadSummary): Promise<void>;
  deleteThread(storageKey: string): Promise<void>;
  /**
   * Up to `limit` conversations last updated at or after `from` and before `to`, least recently
   * updated first: retention reads those before a cutoff, compaction those since its last pass.
   */
  updatedWithin(from: number, to: number, limit: number): Promise<ListedConversation[]>;
  /** When the conversation last changed; undefined when it has no row. */
  updatedAt(storageKey: string): Promise<number | undefined>;
}

/** A conversation the list holds, as retention and compaction look at it. */
export interface ListedConversation {
  readonly storageKey: string;
  readonly owner: ThreadOwner;
  readonly updatedAt: number;
}

/** The text of a message's content: a string, or its text blocks joined. */
function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((block: unknown) => {
      const { type, text } = (block ?? {}) as { type?: unknown; text?: unknown };
      return type === "text" && typeof text === "string" ? text : "";
    })
    .filter(Boolean)
    .join(" ");
}

/**
 * The title of a conversation: the start of its first human message, whitespace folded, at most
 * TITLE_MAX_CHARS characters (code points); null when it has no human message with text.
 */
export function titleOf(messages: readonly unknown[]): string | null {
  for (const message of messages) {
    if (!isBaseMessage(message) || message.getType() !== "human") continue;
    const text = textOf(message.content).replace(/\s+/g, " ").trim();
    if (!text) return null;
    return Array.from(text).slice(0, TITLE_MAX_CHARS).join("");
  }
  return null;
}

/** The summary of a conversation's whole message list. */
export function summaryOf(messages: readonly unknown[]): ThreadSummary {
  return { messageCount: messages.length, title: titleOf(messages) };
}

/** Most recently updated first; equal times by public thread id, so pages never overlap. */
function newestFirst(a: ThreadPosition, b: ThreadPosition): number {
  return b.updatedAt - a.updatedAt || (a.threadId < b.threadId ? -1 : a.threadId > b.threadId ? 1 : 0);
}

interface MemoryRow extends ThreadEntry {
  readonly userId: string;
  readonly agentId: string;
}

/** The index of the memory backend: in this process, lost with it like its checkpoints. */
export class MemoryThreadIndex implements ThreadIndex {
  private readonly rows = new Map<string, MemoryRow>();

  async touch(storageKey: string, owner: ThreadOwner, summary: ThreadSummary, now: number): Promise<void> {
    const old = this.rows.get(storageKey);
    this.rows.set(storageKey, {
      storageKey,
      userId: owner.userId,
      agentId: owner.agentId,
      threadId: owner.threadId,
      title: summary.title ?? old?.title ?? null,
      messageCount: summary.messageCount,
      createdAt: old?.createdAt ?? now,
      updatedAt: now,
    });
  }

  async list(userId: string, agentId: string, offset: number, limit: number): Promise<ThreadPage> {
    const mine = this.mine(userId, agentId);
    return { entries: mine.slice(offset, offset + limit), total: mine.length };
  }

  async listAfter(userId: string, agentId: string, after: ThreadPosition, limit: number): Promise<ThreadPage> {
    const mine = this.mine(userId, agentId);
    return { entries: mine.filter((row) => newestFirst(after, row) < 0).slice(0, limit), total: mine.length };
  }

  private mine(userId: string, agentId: string): MemoryRow[] {
    return [...this.rows.values()].filter((row) => row.userId === userId && row.agentId === agentId).sort(newestFirst);
  }

  async fill(storageKey: string, summary: ThreadSummary): Promise<void> {
    const row = this.rows.get(storageKey);
    if (row && row.messageCount === null) this.rows.set(storageKey, { ...row, ...summary });
  }

  async deleteThread(storageKey: string): Promise<void> {
    this.rows.delete(storageKey);
  }

  async updatedWithin(from: number, to: number, limit: number): Promise<ListedConversation[]> {
    return [...this.rows.values()]
      .filter((row) => row.updatedAt >= from && row.updatedAt < to)
      .sort((a, b) => a.updatedAt - b.updatedAt)
      .slice(0, limit)
      .map((row) => ({ storageKey: row.storageKey, owner: { userId: row.userId, agentId: row.agentId, threadId: row.threadId }, updatedAt: row.updatedAt }));
  }

  async updatedAt(storageKey: string): Promise<number | undefined> {
    return this.rows.get(storageKey)?.updatedAt;
  }
}
