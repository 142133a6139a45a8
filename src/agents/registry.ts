import type { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { StructuredToolInterface } from "@langchain/core/tools";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import type { ActiveShortcuts } from "../config/library-shortcuts.ts";
import { startupRefusalText } from "../config/load.ts";
import { BUILTIN_AGENT_NAMES, type Config } from "../config/schema.ts";
import type { ModelCatalog } from "../models/catalog.ts";
import { unwrapGraph, type Agent, type RegisteredAgent } from "./agent.ts";
import { builtinAgents } from "./builtin/index.ts";
import { loadAgentFromImportString } from "./loader.ts";
import { serviceGraph } from "./service-graph.ts";

/** The frozen set of agents a worker serves, and which one answers the unprefixed routes. */
export interface AgentRegistry {
  readonly agents: ReadonlyMap<string, RegisteredAgent>;
  readonly defaultAgent: string;
  get(name: string): RegisteredAgent | undefined;
}

export class AgentRegistryError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(startupRefusalText("the agent registry is invalid", problems));
    this.name = "AgentRegistryError";
  }
}

export interface RegistryDependencies {
  readonly config: Config;
  readonly model: BaseChatModel;
  readonly models: ModelCatalog;
  readonly checkpointer: BaseCheckpointSaver;
  /** Remote tools per agent name (from MCP_AGENT_SERVERS). */
  readonly toolsFor?: (agentName: string) => readonly StructuredToolInterface[];
  /**
   * Handlers every run of every agent gets (the observability backend's), after the agent's own.
   * Per-run identity (run id, user, public thread id) reaches them through the run's config:
   * `runId` and `metadata` set in prepareRun.
   */
  readonly callbacks?: readonly BaseCallbackHandler[];
  /** Whether the service graphs take the incremental messages reducer (decided at startup). */
  readonly shortcuts: Pick<ActiveShortcuts, "incrementalMessagesReducer">;
}

const AGENT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** Path segments of the service's own routes, and the LangGraph Platform API's top-level ones. */
const RESERVED_NAMES = new Set([
  "info",
  "health",
  "docs",
  "openapi.json",
  "invoke",
  "stream",
  "history",
  "feedback",
  "resume",
  "metrics",
  "threads",
  "runs",
  "assistants",
  "store",
]);

/** Why DEFAULT_AGENT is not served, naming the agents that are (and BUILTIN_AGENTS when it left the agent out). */
function defaultAgentProblem(config: Config, served: readonly string[]): string {
  const name = config.DEFAULT_AGENT;
  const choices = served.length ? served.join(", ") : "none";
  if ((BUILTIN_AGENT_NAMES as readonly string[]).includes(name)) {
    return `DEFAULT_AGENT "${name}" is a built-in agent BUILTIN_AGENTS leaves out: add it to BUILTIN_AGENTS, or set DEFAULT_AGENT to an agent that is served (served: ${choices})`;
  }
  return `DEFAULT_AGENT "${name}" is not a registered agent (registered: ${choices})`;
}

/**
 * Load the built-in agents BUILTIN_AGENTS names and the AGENT_PATHS agents, build each graph once with the service's checkpointer
 * and callback handlers, validate the whole set and freeze it. Any problem stops startup; nothing is skipped.
 */
export async function buildAgentRegistry(deps: RegistryDependencies): Promise<AgentRegistry> {
  const { config } = deps;
  const problems: string[] = [];
  const candidates: Array<{ agent: Agent; origin: string }> = builtinAgents(config).map((agent) => ({ agent, origin: "built-in" }));
  for (const importString of config.AGENT_PATHS) {
    try {
      candidates.push({ agent: await loadAgentFromImportString(importString), origin: `AGENT_PATHS "${importString}"` });
    } catch (error) {
      problems.push((error as Error).message);
    }
  }

  const agents = new Map<string, RegisteredAgent>();
  for (const { agent, origin } of candidates) {
    if (!AGENT_NAME.test(agent.name) || RESERVED_NAMES.has(agent.name)) {
      problems.push(`${origin}: agent name "${agent.name}" is not usable as a path segment`);
      continue;
    }
    if (agents.has(agent.name)) {
      problems.push(`${origin}: an agent named "${agent.name}" is already registered`);
      continue;
    }
    try {
      const built = agent.graphFactory
        ? await agent.graphFactory({
            config,
            model: deps.model,
            models: deps.models,
            tools: deps.toolsFor?.(agent.name) ?? [],
            checkpointer: deps.checkpointer,
          })
        : agent.graph;
      const graph = unwrapGraph(built);
      if (!graph) {
        problems.push(`${origin}: agent "${agent.name}" did not produce a compiled graph`);
        continue;
      }
      agents.set(agent.name, Object.freeze({
        name: agent.name,
        description: agent.description,
        graph: serviceGraph(graph, deps.checkpointer, deps.callbacks, deps.shortcuts),
        supportsModelSelection: agent.supportsModelSelection ?? false,
      }));
    } catch (error) {
      problems.push(`${origin}: building agent "${agent.name}" failed: ${(error as Error).message}`);
    }
  }
  if (!problems.length && !agents.has(config.DEFAULT_AGENT)) problems.push(defaultAgentProblem(config, [...agents.keys()]));
  if (problems.length) throw new AgentRegistryError(problems);

  const frozen = new Map(agents);
  return Object.freeze({
    agents: frozen,
    defaultAgent: config.DEFAULT_AGENT,
    get: (name: string) => frozen.get(name),
  });
}
