import type { Handlers, RouteServices } from "./services.ts";

/** The user_id exactly as the request sent it, for the original service's echo (null when omitted). */
function userIdAsSent(sent: unknown): string | null {
  const value = (sent as { user_id?: unknown } | null | undefined)?.user_id;
  return typeof value === "string" ? value : null;
}

/** A conversation's history: read a page (no lock), append and clear (under the lock). */
export function historyHandlers({ conversations, history }: RouteServices): Pick<Handlers, "readHistory" | "addMessages" | "clearHistory"> {
  return {
    readHistory: async ({ agent, query, principal }) => {
      const conversation = conversations.resolve(principal, agent, query);
      return { status: 200, body: await history.page(conversation, query.offset ?? 0, query.limit) };
    },
    addMessages: async ({ agent, body, sent, principal, run }) => {
      const conversation = conversations.resolve(principal, agent, body);
      const total = await history.append(conversation, body.messages, run);
      const added = body.messages.length;
      return {
        status: 201,
        body: {
          status: "success",
          thread_id: body.thread_id,
          user_id: userIdAsSent(sent),
          message: `Added ${added} messages to chat history.`,
          added,
          total,
        },
      };
    },
    clearHistory: async ({ agent, body, sent, principal, run }) => {
      const conversation = conversations.resolve(principal, agent, body);
      await history.clear(conversation, run);
      return {
        status: 200,
        body: {
          status: "success",
          thread_id: body.thread_id,
          user_id: userIdAsSent(sent),
          message: "Deleted all checkpoints for this conversation.",
          cleared: true,
        },
      };
    },
  };
}
