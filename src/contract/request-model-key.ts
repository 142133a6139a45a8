/**
 * The `configurable` key under which a request's chosen chat model reaches the graph
 * (src/models/selection.ts reads it back). Reserved: `agent_config` may not set it (requests.ts), so
 * it is part of the contract.
 */
export const REQUEST_MODEL_KEY = "agenthost_model";
