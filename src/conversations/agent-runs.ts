import type { FairShare } from "../admission/fair-share.ts";
import type { RegisteredAgent } from "../agents/agent.ts";
import type { Principal } from "../auth/principal.ts";
import type { Config } from "../config/schema.ts";
import type { InvokeRequest, ResumeRequest } from "../contract/requests.ts";
import type { ModelCatalog } from "../models/catalog.ts";
import type { Logger } from "../observability/logger.ts";
import { aimResume, prepareResume, resumeFromInput } from "../runs/interrupts.ts";
import { prepareRun } from "../runs/prepare.ts";
import { AgentRun, type RunAdmission, type RunReporting } from "./agent-run.ts";
import type { Conversation, ConversationService } from "./conversation-service.ts";
import type { Turns, UnderLock } from "./turns.ts";

export interface AgentRunsDependencies {
  readonly config: Config;
  readonly models: ModelCatalog | undefined;
  readonly conversations: ConversationService;
  readonly turns: Turns;
  readonly reporting: RunReporting;
  /** Each user's fair share; absent (or off), runs are not admitted by it. */
  readonly fairShare?: FairShare;
}

/** Who asks for a run and how it is stopped: the caller, its logger and the run's one controller. */
export interface RunAsker {
  readonly principal: Principal;
  readonly agent: RegisteredAgent;
  readonly control: AbortController;
  readonly logger: Logger;
}

/**
 * Makes runs: resolves the conversation a request addresses and prepares its run, so the run exists
 * (with its id) before its lock is taken. Identity and the request's own refusals (a model the agent
 * cannot select, too many attachments) are thrown from here.
 */
export class AgentRuns {
  constructor(private readonly deps: AgentRunsDependencies) {}

  /** A new turn: the request's message on the conversation it names (a new one when it names none). */
  newTurn(asker: RunAsker, body: InvokeRequest): AgentRun {
    const { config, conversations, models } = this.deps;
    const conversation = conversations.resolve(asker.principal, asker.agent, body);
    const prepared = prepareRun(config, conversation, asker.principal, body, models);
    return this.made(asker, conversation, prepared, this.answerPending(conversation, body.input));
  }

  /** A resume of what the conversation's paused run waits for, checked under the lock. */
  resume(asker: RunAsker, body: ResumeRequest): AgentRun {
    const conversation = this.deps.conversations.resolve(asker.principal, asker.agent, body);
    const prepared = prepareResume(this.deps.config, conversation, asker.principal);
    return this.made(asker, conversation, prepared, (run, head) => aimResume(run, head, body));
  }

  /**
   * With CHECK_INTERRUPTS on, an ordinary run on a paused conversation answers its interrupts
   * (checked under the lock); otherwise it starts a new turn. A conversation the request just
   * created cannot be paused.
   */
  private answerPending(conversation: Conversation, input: InvokeRequest["input"]): UnderLock | undefined {
    return this.deps.config.CHECK_INTERRUPTS && !conversation.created ? (run, head) => resumeFromInput(run, head, input) : undefined;
  }

  private made(asker: RunAsker, conversation: Conversation, prepared: AgentRun["prepared"], underLock: UnderLock | undefined): AgentRun {
    return new AgentRun(this.deps.turns, this.deps.reporting, conversation, prepared, asker.control, underLock, asker.logger, this.admission(asker, conversation));
  }

  /**
   * The run's fair share, for the conversation's user. A trusted caller (its token names no user)
   * has the run counted as the user's request here; a caller whose token gives its user was counted
   * as the request arrived (src/http/middleware/fair-share.ts).
   */
  private admission(asker: RunAsker, conversation: Conversation): RunAdmission | undefined {
    const { fairShare } = this.deps;
    if (!fairShare?.on) return undefined;
    const share = { user: conversation.userId, countsRequest: asker.principal.boundUserId === undefined };
    return () => fairShare.run(share);
  }
}
