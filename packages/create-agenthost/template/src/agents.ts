// The agents agenthost serves from this project. AGENT_PATHS (.env, and the Dockerfile) names them as
// "./src/agents.ts:<export>". At startup agenthost calls each graphFactory once with the model its
// settings choose (USE_FAKE_MODEL=true: a fake model; a provider key with DEFAULT_MODEL; or
// MODEL_CONFIGS.default) and serves the graph under /<name>/invoke, /<name>/stream and the rest,
// keeping each conversation in its own storage.
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { StructuredToolInterface } from "@langchain/core/tools";
import { MessagesAnnotation, StateGraph } from "@langchain/langgraph";
import { createAgent } from "langchain";
import { conversationRecordMiddleware, modelMessages, requestModel, requestModelMiddleware, type Agent } from "agenthost/agent";
import { currentTime } from "./tools.ts";

/** One model call per turn, over the conversation so far. */
export function chatGraph(model: BaseChatModel) {
  return new StateGraph(MessagesAnnotation)
    .addNode("reply", async (state, config) => {
      // The model the request chose (model_name or model_config_key), else the service's.
      const chosen = requestModel(config) ?? model;
      // modelMessages leaves out the conversation's records (custom messages), which no model accepts.
      return { messages: [await chosen.invoke(modelMessages(state.messages), config)] };
    })
    .addEdge("__start__", "reply")
    .compile({ name: "chat" });
}

export const chat: Agent = {
  name: "chat",
  description: "Answers from the conversation so far.",
  supportsModelSelection: true,
  graphFactory: ({ model }) => chatGraph(model),
};

/** The model, and the tools it may call until it answers (LangChain's createAgent). */
export function assistantGraph(model: BaseChatModel, moreTools: readonly StructuredToolInterface[] = []) {
  return createAgent({
    name: "assistant",
    model,
    tools: [currentTime, ...moreTools],
    systemPrompt: "You are a helpful assistant. For the date or the time anywhere, call current_time.",
    middleware: [requestModelMiddleware(), conversationRecordMiddleware()],
  });
}

export const assistant: Agent = {
  name: "assistant",
  description: "A helpful assistant that can look up the time anywhere.",
  supportsModelSelection: true,
  // `tools` holds the remote (MCP) tools agenthost's MCP_AGENT_SERVERS assigns to this agent.
  graphFactory: ({ model, tools }) => assistantGraph(model, tools),
};
