import type { InfoResponse } from "../service-schemas.ts";
import type { Handlers, RouteServices } from "./services.ts";

/**
 * GET /info: the agents and the default one, and what one request may carry (an extra field the
 * original's clients ignore). Model configurations are never listed.
 */
export function infoHandlers({ runtime }: RouteServices): Pick<Handlers, "info"> {
  const body: InfoResponse = Object.freeze({
    agents: [...runtime.registry.agents.values()].map((agent) => ({ key: agent.name, description: agent.description })),
    default_agent: runtime.registry.defaultAgent,
    limits: { max_attachments: runtime.config.MULTIMODAL_MAX_ATTACHMENTS },
  });
  return { info: () => ({ status: 200, body }) };
}
