import type { AgentRun } from "../../conversations/agent-run.ts";
import type { RunAsker } from "../../conversations/agent-runs.ts";
import type { OperationInput, Operation } from "../operation.ts";
import type { Handlers, RouteServices } from "./services.ts";

type Asked = Pick<OperationInput<Operation>, "principal" | "run" | "logger" | "announceRun" | "scope"> & { readonly agent: RunAsker["agent"] };

/**
 * Runs and resumes: make the run (services.runs), name it on the request, and hand it to the encoder:
 * its final message, or its events. A resume checks what is pending under the lock, so two resumes
 * of one interrupt cannot both run (the second finds nothing pending).
 */
export function runHandlers(services: RouteServices): Pick<Handlers, "invoke" | "stream" | "streamJsonl" | "resume" | "resumeStream" | "resumeStreamJsonl"> {
  const { runs } = services;

  const asker = (asked: Asked): RunAsker => ({ principal: asked.principal, agent: asked.agent, control: asked.run, logger: asked.logger });

  /** The run, named before anything else happens: `X-Run-Id`, the request's log line, an idempotent answer. */
  const named = (asked: Asked, run: AgentRun): AgentRun => {
    asked.announceRun(run.id);
    asked.scope.agentRun = run;
    return run;
  };

  const answered = async (run: AgentRun) => ({ status: 200 as const, body: await run.answer() });

  return {
    invoke: (asked) => answered(named(asked, runs.newTurn(asker(asked), asked.body))),
    stream: (asked) => named(asked, runs.newTurn(asker(asked), asked.body)).events(asked.body.stream_tokens),
    streamJsonl: (asked) => named(asked, runs.newTurn(asker(asked), asked.body)).events(asked.body.stream_tokens),
    resume: (asked) => answered(named(asked, runs.resume(asker(asked), asked.body))),
    resumeStream: (asked) => named(asked, runs.resume(asker(asked), asked.body)).events(asked.body.stream_tokens),
    resumeStreamJsonl: (asked) => named(asked, runs.resume(asker(asked), asked.body)).events(asked.body.stream_tokens),
  };
}
