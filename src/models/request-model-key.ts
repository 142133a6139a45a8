/**
 * The `configurable` key under which a request's chosen chat model reaches the graph
 * (src/models/selection.ts reads it back). Reserved: `agent_config` may not set it. On its own so
 * that the request contract can name it without loading the model code.
 */
export const REQUEST_MODEL_KEY = "agenthost_model";
