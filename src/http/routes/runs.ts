import type { RegisteredAgent } from "../../agents/agent.ts";
import type { Principal } from "../../auth/principal.ts";
import type { InvokeRequest, ResumeRequest } from "../../contract/requests.ts";
import type { Conversation } from "../../conversations/conversation-service.ts";
import type { RunStream, UnderLock } from "../../conversations/turns.ts";
import { aimResume, prepareResume, resumeFromInput } from "../../runs/interrupts.ts";
import { prepareRun } from "../../runs/prepare.ts";
import type { Logger } from "../../observability/logger.ts";
import { countedRun } from "../run-report.ts";
import type { Handlers, RouteServices } from "./services.ts";

interface Asked<B> {
  readonly agent: RegisteredAgent;
  readonly body: B;
  readonly principal: Principal;
  readonly run: AbortController;
}

/**
 * Runs and resumes: resolve the conversation, prepare the run, run it under the lock (to the end,
 * or as events), answer. A resume checks what is pending under the lock, so two resumes of one
 * interrupt cannot both run (the second finds nothing pending).
 */
export function runHandlers(services: RouteServices): Pick<Handlers, "invoke" | "stream" | "streamJsonl" | "resume" | "resumeStream" | "resumeStreamJsonl"> {
  const { runtime, conversations, turns } = services;
  const { config, metrics, models } = runtime;

  /**
   * With CHECK_INTERRUPTS on, an ordinary run on a paused conversation answers its interrupts
   * (checked under the lock); otherwise it starts a new turn. A conversation the request just
   * created cannot be paused.
   */
  const answerPending = (conversation: Conversation, input: InvokeRequest["input"]): UnderLock | undefined =>
    config.CHECK_INTERRUPTS && !conversation.created ? (run, head) => resumeFromInput(run, head, input) : undefined;

  const newTurn = ({ agent, body, principal }: Asked<InvokeRequest>) => {
    const conversation = conversations.resolve(principal, agent, body);
    const run = prepareRun(config, conversation, principal, body, models);
    return { conversation, run, underLock: answerPending(conversation, body.input) };
  };

  const resumeTurn = ({ agent, body, principal }: Asked<ResumeRequest>) => {
    const conversation = conversations.resolve(principal, agent, body);
    const run = prepareResume(config, conversation, principal);
    const underLock: UnderLock = (prepared, head) => aimResume(prepared, head, body);
    return { conversation, run, underLock };
  };

  const streamed = (asked: Asked<InvokeRequest & { stream_tokens: boolean }>): Promise<RunStream> => {
    const { conversation, run, underLock } = newTurn(asked);
    return turns.stream(conversation, run, asked.run, asked.body.stream_tokens, underLock);
  };

  const resumeStreamed = (asked: Asked<ResumeRequest & { stream_tokens: boolean }>): Promise<RunStream> => {
    const { conversation, run, underLock } = resumeTurn(asked);
    return turns.stream(conversation, run, asked.run, asked.body.stream_tokens, underLock);
  };

  /** A turn run to the end, answered with its final message and counted. */
  const answered = async (asked: { readonly run: AbortController; readonly logger: Logger }, turn: ReturnType<typeof newTurn>) => {
    const { conversation, run, underLock } = turn;
    const answer = turns.invoke(conversation, run, asked.run, underLock);
    return { status: 200 as const, body: await countedRun(metrics, asked.logger, run.agent.name, answer) };
  };

  return {
    invoke: (asked) => answered(asked, newTurn(asked)),
    stream: streamed,
    streamJsonl: streamed,
    resume: (asked) => answered(asked, resumeTurn(asked)),
    resumeStream: resumeStreamed,
    resumeStreamJsonl: resumeStreamed,
  };
}
