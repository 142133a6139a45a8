import { MessagesAnnotation, StateGraph } from "@langchain/langgraph";
import type { Agent } from "../agent.ts";

/** A plain conversational agent: one model call per turn over the whole message list. */
export const chatbotAgent: Agent = {
  name: "chatbot-agent",
  description: "A conversational assistant that answers from the conversation so far.",
  graphFactory: ({ model }) =>
    new StateGraph(MessagesAnnotation)
      .addNode("chatbot", async (state, config) => ({ messages: [await model.invoke(state.messages, config)] }))
      .addEdge("__start__", "chatbot")
      .addEdge("chatbot", "__end__")
      .compile({ name: "chatbot-agent" }),
};
