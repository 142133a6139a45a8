import { BaseMessage, BaseMessageChunk, type BaseMessageLike } from "@langchain/core/messages";
import { messagesStateReducer } from "@langchain/langgraph";

/**
 * LangGraph's `messagesStateReducer` normalises every message of the conversation and indexes all
 * of their ids on every step (about 50 ms at 100,000 messages, twice per turn, each in one tick of
 * the event loop). This reducer gives the same results while doing per message of the conversation
 * only a pointer comparison and one set lookup: it normalises just the step's messages (with
 * LangGraph's reducer, one at a time), and finds where those ids already are in one pass. What it
 * cannot apply that way (a `RemoveMessage`, removing everything, a list whose messages are not all
 * normalised yet) goes to LangGraph's reducer as a whole.
 */

type MessageList = readonly BaseMessage[];

/** The lists this reducer returned, with their elements then: a node may change a list in place. */
const returned = new WeakMap<MessageList, MessageList>();

function unchangedSince(list: MessageList, snapshot: MessageList): boolean {
  if (list.length !== snapshot.length) return false;
  for (let i = 0; i < list.length; i++) if (list[i] !== snapshot[i]) return false;
  return true;
}

/** Per class: are its instances messages and not chunks (LangChain checks a brand and walks the prototypes). */
const messageClasses = new Map<unknown, boolean>();

function isNormalised(message: unknown): message is BaseMessage {
  if (typeof message !== "object" || message === null) return false;
  let isMessageClass = messageClasses.get(message.constructor);
  if (isMessageClass === undefined) {
    isMessageClass = BaseMessage.isInstance(message) && !BaseMessageChunk.isInstance(message);
    messageClasses.set(message.constructor, isMessageClass);
  }
  return isMessageClass && typeof (message as BaseMessage).id === "string";
}

/** True when LangGraph's reducer would take `left` as it is: every element a message with an id, none a chunk. */
function isNormalisedList(left: readonly unknown[]): left is MessageList {
  const snapshot = returned.get(left as MessageList);
  if (snapshot && unchangedSince(left as MessageList, snapshot)) return true;
  return left.every(isNormalised);
}

/**
 * The step's messages normalised one by one by LangGraph's own reducer (ids assigned, chunks made
 * messages), or undefined when one of them removes messages.
 */
function normaliseAdditions(right: BaseMessageLike | BaseMessageLike[]): BaseMessage[] | undefined {
  const out: BaseMessage[] = [];
  for (const item of Array.isArray(right) ? right : [right]) {
    let normalised: BaseMessage[];
    try {
      normalised = messagesStateReducer([], item as BaseMessageLike);
    } catch {
      return undefined; // a RemoveMessage of a message it cannot see here
    }
    if (normalised.length !== 1) return undefined; // removing everything
    out.push(normalised[0]!);
  }
  return out;
}

/** Where each of `ids` last occurs in `list`. */
function lastPositions(list: MessageList, ids: ReadonlySet<string>): Map<string, number> {
  const positions = new Map<string, number>();
  for (let i = 0; i < list.length; i++) {
    const id = list[i]!.id!;
    if (ids.has(id)) positions.set(id, i);
  }
  return positions;
}

function remember(list: BaseMessage[]): BaseMessage[] {
  returned.set(list, list.slice());
  return list;
}

/** Same results as LangGraph's `messagesStateReducer`, without its per-message cost on the whole conversation. */
export function incrementalMessagesReducer(
  left: BaseMessageLike[] | BaseMessageLike,
  right: BaseMessageLike[] | BaseMessageLike,
): BaseMessage[] {
  const additions = Array.isArray(left) ? normaliseAdditions(right) : undefined;
  if (!additions || !isNormalisedList(left as unknown[])) return remember(messagesStateReducer(left, right));
  const merged = (left as MessageList).slice();
  const positions = lastPositions(merged, new Set(additions.map((message) => message.id!)));
  for (const message of additions) {
    const at = positions.get(message.id!);
    if (at === undefined) {
      positions.set(message.id!, merged.length);
      merged.push(message);
    } else {
      merged[at] = message;
    }
  }
  return remember(merged);
}
