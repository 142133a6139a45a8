import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { Command, MessagesAnnotation, StateGraph, interrupt } from "@langchain/langgraph";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";

/**
 * A conversation for comparing a saver of ours with the library's: two turns of a two-node graph
 * whose second node interrupts, the first interrupt answered. Message ids are fixed, so what two
 * savers store can be compared row for row. `configurable` adds to the runs' (a conversation owner,
 * for the conversation list).
 */
export async function converseWithInterrupt(saver: BaseCheckpointSaver, configurable: Record<string, unknown> = {}) {
  const graph = new StateGraph(MessagesAnnotation)
    .addNode("answer", (state: typeof MessagesAnnotation.State) => ({ messages: [new AIMessage({ id: `a${state.messages.length}`, content: `seen ${state.messages.length}` })] }))
    .addNode("approve", () => {
      const reply = interrupt("approve?");
      return { messages: [new AIMessage({ id: "approval", content: String(reply) })] };
    })
    .addEdge("__start__", "answer")
    .addEdge("answer", "approve")
    .compile({ checkpointer: saver });
  const config = { configurable: { ...configurable, thread_id: "t" }, durability: "sync" as const };
  await graph.invoke({ messages: [new HumanMessage({ id: "h1", content: "one" })] }, config);
  await graph.invoke(new Command({ resume: "yes" }), config);
  await graph.invoke({ messages: [new HumanMessage({ id: "h2", content: "two" })] }, config);
  return {
    /** Every checkpoint's state, next nodes and interrupts, newest first. */
    async history() {
      const snapshots = [];
      for await (const snapshot of graph.getStateHistory(config)) snapshots.push({ next: snapshot.next, values: snapshot.values, tasks: snapshot.tasks.map((t) => [t.name, t.interrupts.length]) });
      return snapshots;
    },
  };
}
