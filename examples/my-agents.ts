// my-agents.ts
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { MessagesAnnotation, StateGraph } from "@langchain/langgraph";
import type { Agent } from "agenthost/agent";

export const echo: Agent = {
  name: "echo",
  description: "Repeats the last message, numbered by turn",
  // Runs once at each startup; it also receives { model, tools, config } for agents that call a model.
  graphFactory: () =>
    new StateGraph(MessagesAnnotation)
      .addNode("echo", (state) => {
        const turn = state.messages.filter((m) => HumanMessage.isInstance(m)).length;
        return { messages: [new AIMessage(`${turn}: ${String(state.messages.at(-1)?.content)}`)] };
      })
      .addEdge("__start__", "echo")
      .compile({ name: "echo" }),
};
