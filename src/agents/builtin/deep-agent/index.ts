import type { Agent } from "../../agent.ts";

/**
 * The built-in deep agent. Its model is chosen once per worker (USE_FAKE_MODEL, else
 * MODEL_CONFIGS.deep_agent, else the provider variables); requests cannot switch it, so it does not
 * declare runtime model selection and model fields on its requests are rejected (422). Its graph,
 * and the deepagents library with it (about a quarter of a worker's start), is loaded only by a
 * worker that serves it.
 */
export const deepAgent: Agent = {
  name: "deep-agent",
  description: "A planning assistant with a private virtual file system, a todo list, arithmetic tools and subagents.",
  graphFactory: async ({ config, models, tools, checkpointer }) =>
    (await import("./build.ts")).buildDeepAgentGraph({ model: models.deepAgent, tools, checkpointer, interruptOn: config.DEEP_AGENT_INTERRUPT_ON }),
};
