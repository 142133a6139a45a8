import { createAgent } from "langchain";
import { requestModelMiddleware } from "../../models/selection.ts";
import type { Agent } from "../agent.ts";
import { conversationRecordMiddleware } from "../conversation-record.ts";
import { addTool, multiplyTool } from "./tools.ts";

/**
 * A tool-calling agent built with LangChain's agent factory: arithmetic tools plus any MCP tools.
 * A middleware swaps in the request's model (when it chose one) before each model call.
 */
export const createAgentAgent: Agent = {
  name: "create-agent",
  description: "A tool-calling assistant (add, multiply, and any remote tools assigned to it).",
  supportsModelSelection: true,
  graphFactory: ({ model, tools, checkpointer }) =>
    createAgent({
      name: "create-agent",
      model,
      tools: [addTool, multiplyTool, ...tools],
      middleware: [requestModelMiddleware(), conversationRecordMiddleware()],
      systemPrompt: "You are a helpful assistant. Use the add and multiply tools for arithmetic.",
      checkpointer,
    }),
};
