import type { Handlers, RouteServices } from "./services.ts";

/** The caller's conversations with an agent (no lock: the list is an index read). */
export function threadHandlers({ threads }: RouteServices): Pick<Handlers, "listThreads"> {
  return {
    listThreads: async ({ agent, query, principal }) => ({ status: 200, body: await threads.page(principal, agent, query) }),
  };
}
