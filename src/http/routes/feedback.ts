import { submitFeedback } from "../../feedback/submission.ts";
import type { Handlers, RouteServices } from "./services.ts";

/** Feedback on a run, for the observability backend. */
export function feedbackHandlers({ runtime }: RouteServices): Pick<Handlers, "feedback"> {
  const deps = { config: runtime.config, delivery: runtime.feedback };
  return {
    feedback: async ({ agent, body, principal, run, logger }) => ({
      status: 201,
      body: await submitFeedback(deps, principal, agent, body, run.signal, logger),
    }),
  };
}
