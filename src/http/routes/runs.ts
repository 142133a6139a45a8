import type { RegisteredAgent } from "../../agents/agent.ts";
import type { Principal } from "../../auth/principal.ts";
import type { InvokeRequest, ResumeRequest } from "../../contract/requests.ts";
import type { Conversation } from "../../conversations/conversation-service.ts";
import type { RunStream, UnderLock } from "../../conversations/turns.ts";
import { aimResume, prepareResume, resumeFromInput } from "../../runs/interrupts.ts";
import { prepareRun } from "../../runs/prepare.ts";
import type { RequestScope } from "../request-scope.ts";
import { countedRun, startRun } from "../run-report.ts";
import type { Handlers, RouteServices } from "./services.ts";

interface Asked<B> {
  readonly agent: RegisteredAgent;
  readonly body: B;
  readonly principal: Principal;
  readonly run: AbortController;
  readonly announceRun: (runId: string) => void;
}

/** A run's stream with its events bound to the run's span (a class, not a per-request prototype: see RequestInput in mount-operations.ts). */
class SpanBoundStream implements RunStream {
  constructor(
    private readonly inner: RunStream,
    readonly events: RunStream["events"],
  ) {}

  get run(): RunStream["run"] {
    return this.inner.run;
  }

  get finished(): boolean {
    return this.inner.finished;
  }
}

/**
 * Runs and resumes: resolve the conversation, prepare the run, run it under the lock (to the end,
 * or as events), answer. A resume checks what is pending under the lock, so two resumes of one
 * interrupt cannot both run (the second finds nothing pending).
 */
export function runHandlers(services: RouteServices): Pick<Handlers, "invoke" | "stream" | "streamJsonl" | "resume" | "resumeStream" | "resumeStreamJsonl"> {
  const { runtime, conversations, turns } = services;
  const { config, metrics, models, tracing } = runtime;

  /**
   * With CHECK_INTERRUPTS on, an ordinary run on a paused conversation answers its interrupts
   * (checked under the lock); otherwise it starts a new turn. A conversation the request just
   * created cannot be paused.
   */
  const answerPending = (conversation: Conversation, input: InvokeRequest["input"]): UnderLock | undefined =>
    config.CHECK_INTERRUPTS && !conversation.created ? (run, head) => resumeFromInput(run, head, input) : undefined;

  const newTurn = ({ agent, body, principal, announceRun }: Asked<InvokeRequest>) => {
    const conversation = conversations.resolve(principal, agent, body);
    const run = prepareRun(config, conversation, principal, body, models);
    announceRun(run.runId);
    return { conversation, run, underLock: answerPending(conversation, body.input) };
  };

  const resumeTurn = ({ agent, body, principal, announceRun }: Asked<ResumeRequest>) => {
    const conversation = conversations.resolve(principal, agent, body);
    const run = prepareResume(config, conversation, principal);
    announceRun(run.runId);
    const underLock: UnderLock = (prepared, head) => aimResume(prepared, head, body);
    return { conversation, run, underLock };
  };

  /** A turn as events; with tracing on, the graph runs under the run's span (the same stream, its events bound to the span). */
  const eventsOf = (asked: Asked<{ stream_tokens: boolean }> & { readonly scope: RequestScope }, turn: ReturnType<typeof newTurn>): Promise<RunStream> => {
    const { conversation, run, underLock } = turn;
    const started = startRun(tracing, asked.scope, run, () => turns.stream(conversation, run, asked.run, asked.body.stream_tokens, underLock));
    if (!tracing) return started;
    return started.then((stream) => {
      const trace = asked.scope.runTrace!;
      return new SpanBoundStream(stream, trace.bindEvents(stream.events));
    });
  };

  /** A turn run to the end, answered with its final message and counted. */
  const answered = async (asked: { readonly run: AbortController; readonly scope: RequestScope }, turn: ReturnType<typeof newTurn>) => {
    const { conversation, run, underLock } = turn;
    const answer = startRun(tracing, asked.scope, run, () => turns.invoke(conversation, run, asked.run, underLock));
    return { status: 200 as const, body: await countedRun(metrics, asked.scope, run, answer) };
  };

  const streamed = (asked: Asked<InvokeRequest & { stream_tokens: boolean }> & { readonly scope: RequestScope }) => eventsOf(asked, newTurn(asked));
  const resumeStreamed = (asked: Asked<ResumeRequest & { stream_tokens: boolean }> & { readonly scope: RequestScope }) => eventsOf(asked, resumeTurn(asked));

  return {
    invoke: (asked) => answered(asked, newTurn(asked)),
    stream: streamed,
    streamJsonl: streamed,
    resume: (asked) => answered(asked, resumeTurn(asked)),
    resumeStream: resumeStreamed,
    resumeStreamJsonl: resumeStreamed,
  };
}
