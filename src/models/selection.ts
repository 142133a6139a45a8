import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { RunnableConfig } from "@langchain/core/runnables";
import { createMiddleware } from "langchain";
import { REQUEST_MODEL_KEY } from "../contract/request-model-key.ts";

/*
 * How a request's model reaches the graph. The service resolves `model_config_key` or
 * `model_name`/`model_provider` before the run (refusing the request when it cannot) and puts the chat model in
 * `configurable[REQUEST_MODEL_KEY]`; a graph that supports runtime model selection picks it up when
 * it calls the model. The key is reserved: `agent_config` may not set it. Only primitive configurable
 * values are copied into trace metadata, so the model object never is; checkpoints never store
 * `configurable` at all.
 */

function isChatModel(value: unknown): value is BaseChatModel {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { invoke?: unknown }).invoke === "function" &&
    typeof (value as { _llmType?: unknown })._llmType === "function"
  );
}

/** The model this run's request selected, if any: read it in a node with the node's config. */
export function requestModel(config: Pick<RunnableConfig, "configurable"> | undefined): BaseChatModel | undefined {
  const value: unknown = config?.configurable?.[REQUEST_MODEL_KEY];
  return isChatModel(value) ? value : undefined;
}

/**
 * For agents built with LangChain's `createAgent` (and deepagents): swaps the agent's model for the
 * request's model at call time, before tools are bound.
 */
export function requestModelMiddleware() {
  return createMiddleware({
    name: "AgenthostRequestModel",
    wrapModelCall: (request, handler) => {
      const chosen = requestModel({ configurable: request.runtime.configurable });
      return handler(chosen ? { ...request, model: chosen } : request);
    },
  });
}
