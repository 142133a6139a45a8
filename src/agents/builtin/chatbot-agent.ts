import { MessagesAnnotation, StateGraph } from "@langchain/langgraph";
import { requestModel } from "../../models/selection.ts";
import type { Agent } from "../agent.ts";
import { modelMessages } from "../conversation-record.ts";

/**
 * A plain conversational agent: one model call per turn over the whole message list (custom
 * records left out). The model is picked at call time: the request's model (model_config_key,
 * model_name/model_provider) when it chose one, else the worker's default model.
 */
export const chatbotAgent: Agent = {
  name: "chatbot-agent",
  description: "A conversational assistant that answers from the conversation so far.",
  supportsModelSelection: true,
  graphFactory: ({ model }) =>
    new StateGraph(MessagesAnnotation)
      .addNode("chatbot", async (state, config) => {
        const chosen = requestModel(config) ?? model;
        return { messages: [await chosen.invoke(modelMessages(state.messages), config)] };
      })
      .addEdge("__start__", "chatbot")
      .addEdge("chatbot", "__end__")
      .compile({ name: "chatbot-agent" }),
};
