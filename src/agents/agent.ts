import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { StructuredToolInterface } from "@langchain/core/tools";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import type { CompiledStateGraph } from "@langchain/langgraph";
import type { Config } from "../config/schema.ts";
import type { ModelCatalog } from "../models/catalog.ts";

/** For agents that declare `supportsModelSelection`: the request's model, picked at call time. */
export { requestModel, requestModelMiddleware } from "../models/selection.ts";

/** `custom` messages are a record for people and programs: keep them out of model prompts. */
export { conversationRecordMiddleware, modelMessages } from "./conversation-record.ts";

/**
 * A compiled LangGraph graph whose state has a `messages` channel. The service only needs the
 * Pregel surface (invoke, stream, getState, updateState) and a settable checkpointer.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type CompiledGraph = CompiledStateGraph<any, any, any, any, any, any, any, any, any>;

/** What a graphFactory receives at startup to build its graph. */
export interface AgentBuildContext {
  readonly config: Config;
  /** The worker's default chat model (the fake model when USE_FAKE_MODEL=true). */
  readonly model: BaseChatModel;
  /** Every model the worker serves with (the deep agent's model, MODEL_CONFIGS entries). */
  readonly models: ModelCatalog;
  /** Remote (MCP) tools assigned to this agent by MCP_AGENT_SERVERS; empty when none. */
  readonly tools: readonly StructuredToolInterface[];
  /** The service's checkpointer; factories that build through an agent helper may pass it on. */
  readonly checkpointer: BaseCheckpointSaver;
}

/** A hostable agent: a prebuilt graph, or a factory run once at each startup. */
export interface Agent {
  readonly name: string;
  readonly description: string;
  readonly graph?: CompiledGraph;
  readonly graphFactory?: (context: AgentBuildContext) => CompiledGraph | { graph: CompiledGraph } | Promise<CompiledGraph | { graph: CompiledGraph }>;
  /** True when requests may choose the model (model_config_key, model_name/model_provider). */
  readonly supportsModelSelection?: boolean;
}

/** An agent ready to serve: its graph compiled with the service's checkpointer. */
export interface RegisteredAgent {
  readonly name: string;
  readonly description: string;
  readonly graph: CompiledGraph;
  readonly supportsModelSelection: boolean;
}

export function isCompiledGraph(value: unknown): value is CompiledGraph {
  if (typeof value !== "object" || value === null) return false;
  const candidate = value as Record<string, unknown>;
  return (
    typeof candidate.invoke === "function" &&
    typeof candidate.stream === "function" &&
    typeof candidate.getState === "function" &&
    typeof candidate.nodes === "object"
  );
}

/** A compiled graph, or something wrapping one under `graph` (LangChain's createAgent result). */
export function unwrapGraph(value: unknown): CompiledGraph | undefined {
  if (isCompiledGraph(value)) return value;
  if (typeof value === "object" && value !== null && "graph" in value) {
    const inner = (value as { graph: unknown }).graph;
    if (isCompiledGraph(inner)) return inner;
  }
  return undefined;
}

export function isAgent(value: unknown): value is Agent {
  if (typeof value !== "object" || value === null) return false;
  const candidate = value as Record<string, unknown>;
  return (
    typeof candidate.name === "string" &&
    (candidate.graph !== undefined || typeof candidate.graphFactory === "function") &&
    !isCompiledGraph(value)
  );
}
