import type { BuiltinAgentName, Config } from "../../config/schema.ts";
import type { Agent } from "../agent.ts";
import { chatbotAgent } from "./chatbot-agent.ts";
import { createAgentAgent } from "./create-agent.ts";
import { deepAgent } from "./deep-agent/index.ts";

/** Every built-in agent by its name (BUILTIN_AGENT_NAMES in the config lists the same names). */
const BUILTIN: Readonly<Record<BuiltinAgentName, Agent>> = {
  "chatbot-agent": chatbotAgent,
  "create-agent": createAgentAgent,
  "deep-agent": deepAgent,
};

/** The built-in agents a worker serves besides those listed in AGENT_PATHS: those BUILTIN_AGENTS names (all by default). */
export function builtinAgents(config: Pick<Config, "BUILTIN_AGENTS">): Agent[] {
  return config.BUILTIN_AGENTS.map((name) => BUILTIN[name]);
}
