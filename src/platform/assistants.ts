import { uuid5 } from "@langchain/langgraph-checkpoint";
import type { RegisteredAgent } from "../agents/agent.ts";
import type { AgentRegistry } from "../agents/registry.ts";
import { OPEN_ACCESS, type AgentAccess } from "../auth/agent-access.ts";
import type { Principal } from "../auth/principal.ts";
import { ServiceError } from "../errors/service-error.ts";

/**
 * The LangGraph Platform API's assistants: one per registered agent, its `graph_id` the agent's name.
 * Its id is a UUIDv5 of the name in the namespace LangGraph's own server uses for its default
 * assistants, so it is the same on every worker and host, across restarts, and the same id a client
 * written against LangGraph's server already knows. Assistants are the registry's: creating,
 * updating or versioning one is refused (the agents are code, deployed with the service).
 */

/** The namespace of LangGraph's default assistant ids. */
const ASSISTANT_NAMESPACE = "6ba7b821-9dad-11d1-80b4-00c04fd430c8";

export interface Assistant {
  readonly assistant_id: string;
  readonly graph_id: string;
  readonly name: string;
  readonly description: string | null;
  readonly config: Record<string, unknown>;
  readonly context: Record<string, unknown>;
  readonly metadata: Record<string, unknown>;
  readonly version: number;
  readonly created_at: string;
  readonly updated_at: string;
}

export interface AssistantSearch {
  readonly graph_id?: string | undefined;
  readonly name?: string | undefined;
  readonly metadata?: Record<string, unknown> | null | undefined;
  readonly limit: number;
  readonly offset: number;
  readonly sort_by?: "assistant_id" | "graph_id" | "name" | "created_at" | "updated_at" | null | undefined;
  readonly sort_order?: "asc" | "desc" | null | undefined;
}

/** Assistant ids already derived, by agent name (each is a SHA-1). */
const knownIds = new Map<string, string>();

/** The assistant id LangGraph gives an agent's default assistant: a UUID v5 of its name. */
export function assistantIdOf(agentName: string): string {
  let id = knownIds.get(agentName);
  if (id === undefined) {
    // A name read back from a record may be of an agent no longer served: the memo stays small.
    if (knownIds.size >= 1_000) knownIds.clear();
    knownIds.set(agentName, (id = uuid5(agentName, ASSISTANT_NAMESPACE)));
  }
  return id;
}

export class Assistants {
  private readonly byId = new Map<string, { agent: RegisteredAgent; assistant: Assistant }>();
  private readonly ordered: Assistant[] = [];

  constructor(
    private readonly registry: AgentRegistry,
    private readonly access: AgentAccess = OPEN_ACCESS,
  ) {
    // The assistants are the deployment's code, not stored records: the same on every worker, so one fixed time.
    const at = new Date(0).toISOString();
    for (const agent of registry.agents.values()) {
      const assistant: Assistant = {
        assistant_id: assistantIdOf(agent.name),
        graph_id: agent.name,
        name: agent.name,
        description: agent.description || null,
        config: {},
        context: {},
        metadata: { created_by: "system" },
        version: 1,
        created_at: at,
        updated_at: at,
      };
      this.byId.set(assistant.assistant_id, { agent, assistant });
      this.ordered.push(assistant);
    }
  }

  /**
   * The agent an assistant id or a graph id (an agent's name) names, as runs and thread searches
   * accept either. An unknown one is 404 unknown_agent.
   */
  agentOf(idOrGraph: string, caller?: Principal): RegisteredAgent {
    const found = this.byId.get(idOrGraph)?.agent ?? this.registry.get(idOrGraph);
    if (!found) throw new ServiceError("unknown_agent", { detail: `No assistant or graph "${idOrGraph}" is registered.` });
    if (caller) this.access.check(caller, found.name);
    return found;
  }

  get(idOrGraph: string, caller?: Principal): Assistant {
    return this.byId.get(assistantIdOf(this.agentOf(idOrGraph, caller).name))!.assistant;
  }

  /** A page of the assistants `caller` may use (the others are left out, as if not registered). */
  search(query: AssistantSearch, caller?: Principal): Assistant[] {
    return this.matching(query, caller)
      .sort(order(query.sort_by ?? "created_at", query.sort_order ?? "desc"))
      .slice(query.offset, query.offset + query.limit);
  }

  count(query: Omit<AssistantSearch, "limit" | "offset">, caller?: Principal): number {
    return this.matching(query, caller).length;
  }

  private matching(query: Omit<AssistantSearch, "limit" | "offset">, caller: Principal | undefined): Assistant[] {
    return this.ordered.filter(
      (assistant) =>
        (caller === undefined || this.access.allows(caller, assistant.graph_id)) &&
        (query.graph_id === undefined || assistant.graph_id === query.graph_id) &&
        (query.name === undefined || assistant.name.toLowerCase().includes(query.name.toLowerCase())) &&
        Object.entries(query.metadata ?? {}).every(([key, value]) => JSON.stringify(assistant.metadata[key]) === JSON.stringify(value)),
    );
  }
}

function order(by: NonNullable<AssistantSearch["sort_by"]>, direction: "asc" | "desc"): (a: Assistant, b: Assistant) => number {
  const sign = direction === "asc" ? 1 : -1;
  return (a, b) => {
    const x = a[by];
    const y = b[by];
    // Equal keys (every assistant was created at startup) fall back to the graph id, ascending.
    return (x < y ? -sign : x > y ? sign : 0) || (a.graph_id < b.graph_id ? -1 : a.graph_id > b.graph_id ? 1 : 0);
  };
}
