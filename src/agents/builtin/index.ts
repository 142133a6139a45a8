import type { Config } from "../../config/schema.ts";
import type { Agent } from "../agent.ts";
import { chatbotAgent } from "./chatbot-agent.ts";
import { createAgentAgent } from "./create-agent.ts";
import { deepAgent } from "./deep-agent/index.ts";

/** The agents every worker serves besides those listed in AGENT_PATHS. */
export function builtinAgents(_config: Config): Agent[] {
  return [chatbotAgent, createAgentAgent, deepAgent];
}
