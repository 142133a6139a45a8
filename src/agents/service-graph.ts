import type { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { BinaryOperatorAggregate, messagesStateReducer } from "@langchain/langgraph";
import { NO_SHORTCUTS, type ActiveShortcuts } from "../config/library-shortcuts.ts";
import type { CompiledGraph } from "./agent.ts";
import { incrementalMessagesReducer } from "./incremental-messages.ts";

/** A LangGraph graph (it copies itself), as opposed to an object that only has a graph's surface. */
function isPregel(graph: CompiledGraph): boolean {
  return typeof graph.withConfig === "function" && typeof graph.channels === "object" && graph.channels !== null;
}

/**
 * The graph the service runs for an agent: a copy of the agent's compiled graph with the service's
 * checkpointer and, after the agent's own callback handlers, the service's (tracing). The agent's
 * own object is left as it was, so two runtimes in one process never rebind each other's graph.
 * When its `messages` channel uses LangGraph's messages reducer and the incrementalMessagesReducer
 * shortcut is on (src/config/library-shortcuts.ts: it reads the channel's internals), the copy's
 * channel uses the incremental reducer: the same results, at the cost of each step's messages
 * rather than of the whole conversation. Off, the copy keeps LangGraph's reducer.
 */
export function serviceGraph(
  graph: CompiledGraph,
  checkpointer: BaseCheckpointSaver,
  callbacks: readonly BaseCallbackHandler[] = [],
  shortcuts: Pick<ActiveShortcuts, "incrementalMessagesReducer"> = NO_SHORTCUTS,
): CompiledGraph {
  const own = graph.config?.callbacks;
  if (callbacks.length > 0 && own !== undefined && !Array.isArray(own)) {
    throw new Error("the graph configures a callback manager; tracing needs a handler list");
  }
  const added = callbacks.length > 0 ? { callbacks: [...callbacks] } : {};
  let copy: CompiledGraph;
  if (isPregel(graph)) {
    copy = graph.withConfig(added) as CompiledGraph;
  } else {
    copy = Object.create(graph) as CompiledGraph;
    if (callbacks.length > 0) copy.config = { ...graph.config, callbacks: [...(Array.isArray(own) ? own : []), ...callbacks] };
  }
  copy.checkpointer = checkpointer;
  const messages: unknown = copy.channels?.messages;
  if (shortcuts.incrementalMessagesReducer && messages instanceof BinaryOperatorAggregate && messages.operator === messagesStateReducer) {
    const { initialValueFactory } = messages as unknown as { initialValueFactory?: () => unknown };
    copy.channels = {
      ...copy.channels,
      messages: new BinaryOperatorAggregate(incrementalMessagesReducer as typeof messagesStateReducer, initialValueFactory as never),
    };
  }
  return copy;
}
