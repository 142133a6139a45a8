import { Router } from "express";
import type { Runtime } from "../../runtime.ts";

/** GET /info: the agents and the default one. Model configurations are never listed. */
export function infoRoutes(runtime: Runtime): Router {
  const body = Object.freeze({
    agents: [...runtime.registry.agents.values()].map((agent) => ({ key: agent.name, description: agent.description })),
    default_agent: runtime.registry.defaultAgent,
  });
  const router = Router();
  router.get("/info", (_req, res) => {
    res.json(body);
  });
  return router;
}
