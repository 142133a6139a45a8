import { EMPTY_HEAD, ensureRoomForRun, type ConversationHead, type ConversationStore } from "../checkpoints/conversation-store.ts";
import type { ChatMessage, StreamEvent } from "../contract/messages.ts";
import { ServiceError } from "../errors/service-error.ts";
import { invokeRun, streamRun } from "../runs/execute.ts";
import type { ActiveRuns } from "../coordination/cancel/active-runs.ts";
import type { PreparedRun } from "../runs/prepare.ts";
import { classifyRunError } from "../runs/run-failure.ts";
import type { Conversation, ConversationService, HeldConversation } from "./conversation-service.ts";

/** Work done under the conversation lock before the run starts (a resume aims at what is pending). */
export type UnderLock = (run: PreparedRun, head: ConversationHead) => PreparedRun | Promise<PreparedRun>;

/**
 * A run that started and then failed: `error` is how to report it, `cause` what was thrown. Failures
 * before the run starts (a busy conversation, a full one, nothing pending to resume) are thrown as
 * plain ServiceErrors instead: they are answers to the request, not runs. `executed` says whether the
 * graph had begun executing (false: it failed under the lock before that, e.g. reading the
 * conversation), so whether anything of the turn may have been stored. A streamed run's message that
 * was still held back when it failed comes with it, to be handed over before the failure.
 */
export class RunFailure extends Error {
  constructor(
    readonly error: ServiceError,
    readonly run: PreparedRun,
    cause: unknown,
    readonly executed: boolean,
    readonly undelivered?: unknown,
  ) {
    super(error.message, { cause });
    this.name = "RunFailure";
  }
}

/** A streamed run that holds its conversation until its events end (or the consumer stops reading). */
export interface RunStream<E = StreamEvent> {
  readonly run: PreparedRun;
  readonly events: AsyncGenerator<E, void, undefined>;
  /** Set once the run itself finished cleanly, before its final message is handed over. */
  readonly finished: boolean;
}

/** A run's events, and whether the run itself finished (set by the events as they end). A class: see RequestInput in http/mount-operations.ts. */
class TurnStream<E> implements RunStream<E> {
  finished = false;
  readonly events: AsyncGenerator<E, void, undefined>;

  constructor(
    readonly run: PreparedRun,
    events: (progress: { finished: boolean }) => AsyncGenerator<E, void, undefined>,
  ) {
    this.events = events(this);
  }
}

export interface TurnDependencies {
  readonly conversations: ConversationService;
  /** Where a run reads its conversation's head (and its graph then the same read). */
  readonly store: ConversationStore;
  /** CONVERSATION_MAX_MESSAGES: a full conversation takes no new run. */
  readonly maxMessages: number;
  /** The runs holding a conversation in this process, for POST /cancel. */
  readonly active: ActiveRuns;
}

/**
 * How a streamed run's graph is executed and what it yields: agenthost's own events (messages and
 * tokens) or the LangGraph Platform API's chunks. An event that may be the run's last is held back
 * until the next shows it is not, so the last is handed over only after the lock is released.
 */
export interface RunExecutor<E> {
  execute(run: PreparedRun, signal: AbortSignal): AsyncGenerator<E, void, undefined>;
  mayBeFinal(event: E): boolean;
}

/** agenthost's own stream: each message a node adds, and token text when asked for. */
export function messageEvents(tokens: boolean): RunExecutor<StreamEvent> {
  return { execute: (run, signal) => streamRun(run, signal, { tokens }), mayBeFinal: isFinalMessage };
}

/** An AI message without tool calls: the run may end with it. */
function isFinalMessage(event: StreamEvent): boolean {
  return event.type === "message" && event.content.type === "ai" && event.content.tool_calls.length === 0;
}

/**
 * Runs a prepared turn of a conversation under its lock: to the end (invoke) or as events (stream).
 * The final message is handed over only after the lock is released, so a caller acting on it never
 * finds its own conversation busy.
 */
export class Turns {
  constructor(private readonly deps: TurnDependencies) {}

  /**
   * Under the lock, before the run: one read of the conversation's latest checkpoint answers both the
   * message cap and, for a resume or a run on a paused conversation, what is pending.
   */
  private async start(conversation: Conversation, run: PreparedRun, underLock: UnderLock | undefined): Promise<PreparedRun> {
    // A conversation the request created has nothing stored yet: no read can tell more.
    const head = conversation.created ? EMPTY_HEAD : await this.deps.store.headForRun(run.storageKey);
    ensureRoomForRun(head, this.deps.maxMessages);
    // A run whose tokens are counted counts the messages it adds after these.
    const started = run.usage ? { ...run, messagesBefore: head.messageCount } : run;
    return underLock ? underLock(started, head) : started;
  }

  /** Run to the end and return the final message. */
  invoke(conversation: Conversation, prepared: PreparedRun, control: AbortController, underLock?: UnderLock): Promise<ChatMessage> {
    return this.deps.conversations.withConversation(conversation, control, async (runSignal) => {
      let run = prepared;
      let executed = false;
      let failed = false;
      // A cancel reaches the run from the moment it holds the conversation.
      const leave = this.deps.active.enter(prepared.storageKey, prepared.runId, control);
      try {
        run = await this.start(conversation, run, underLock);
        executed = true;
        return await invokeRun(run, runSignal);
      } catch (cause) {
        failed = executed;
        if (cause instanceof ServiceError && cause.refusal) throw cause;
        throw new RunFailure(classifyRunError(cause, runSignal.aborted ? runSignal.reason : undefined, run), run, cause, executed);
      } finally {
        this.deps.store.endRun(prepared.storageKey, failed);
        leave();
      }
    });
  }

  /**
   * Take the lock and check the conversation, then hand back the run's events. Everything that
   * refuses the run is thrown from here, before a single event exists; a failure of the run itself
   * ends the events with a RunFailure.
   */
  async stream<E>(conversation: Conversation, prepared: PreparedRun, control: AbortController, executor: RunExecutor<E>, underLock?: UnderLock): Promise<RunStream<E>> {
    const locked = await this.deps.conversations.hold(conversation, control, !prepared.refusesBusy);
    let run: PreparedRun;
    try {
      run = await this.start(conversation, prepared, underLock);
    } catch (error) {
      this.deps.store.endRun(prepared.storageKey, false);
      await locked.release();
      throw error instanceof ServiceError ? error : classifyRunError(error, undefined, prepared);
    }
    const leave = this.deps.active.enter(run.storageKey, run.runId, control);
    const held: HeldConversation = {
      signal: locked.signal,
      release: () => {
        leave();
        return locked.release();
      },
    };
    return new TurnStream(run, (progress) => this.events(run, held, executor, progress));
  }

  private async *events<E>(
    run: PreparedRun,
    held: HeldConversation,
    executor: RunExecutor<E>,
    progress: { finished: boolean },
  ): AsyncGenerator<E, void, undefined> {
    // An event that may be the final answer waits until the next event shows it is not.
    let candidate: E | undefined;
    try {
      for await (const event of executor.execute(run, held.signal)) {
        if (candidate !== undefined) yield candidate;
        candidate = undefined;
        if (executor.mayBeFinal(event)) candidate = event;
        else yield event;
      }
      progress.finished = true;
    } catch (cause) {
      const error = classifyRunError(cause, held.signal.aborted ? held.signal.reason : undefined, run);
      throw new RunFailure(error, run, cause, true, candidate);
    } finally {
      // A run that did not finish (it failed, or its consumer stopped reading) may have changed revived messages it never saved.
      this.deps.store.endRun(run.storageKey, !progress.finished);
      await held.release();
    }
    if (candidate !== undefined) yield candidate;
  }
}
