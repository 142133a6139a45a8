import type { InfoResponse } from "../service-schemas.ts";
import type { Handlers, RouteServices } from "./services.ts";

/**
 * GET /info: the agents the caller may use (AGENT_ACCESS) and the default one, and what one request
 * may carry (an extra field the original's clients ignore). Model configurations are never listed.
 */
export function infoHandlers({ runtime, access }: RouteServices): Pick<Handlers, "info"> {
  const agents = [...runtime.registry.agents.values()].map((agent) => ({ key: agent.name, description: agent.description }));
  const limits = { max_attachments: runtime.config.MULTIMODAL_MAX_ATTACHMENTS };
  const everything: InfoResponse = Object.freeze({ agents, default_agent: runtime.registry.defaultAgent, limits });
  const restricted = Object.keys(runtime.config.AGENT_ACCESS).length > 0;
  return {
    info: (asked) => {
      if (!restricted) return { status: 200, body: everything };
      const body: InfoResponse = { ...everything, agents: agents.filter((agent) => access.allows(asked.principal, agent.key)) };
      return { status: 200, body };
    },
  };
}
