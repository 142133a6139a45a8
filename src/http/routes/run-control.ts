import type { Handlers, RouteServices } from "./services.ts";

/** Stop a run, and read a resumable run's events again (conversations/run-control.ts). */
export function runControlHandlers(services: RouteServices): Pick<Handlers, "cancel" | "runStream" | "runStreamJsonl"> {
  const { runControl } = services;
  const replay = ({ agent, principal, params, query, header, run }: Parameters<Handlers["runStream" | "runStreamJsonl"]>[0]) =>
    runControl.replay(principal, agent, params.run_id!, { ...query, lastEventId: header("last-event-id") }, run.signal);
  return {
    cancel: async ({ agent, body, principal }) => ({ status: 200, body: await runControl.cancel(principal, agent, body) }),
    runStream: replay,
    runStreamJsonl: replay,
  };
}
