import { randomUUID } from "node:crypto";
import { Command } from "@langchain/langgraph";
import type { FairShare, RunTicket } from "../admission/fair-share.ts";
import type { PlatformRecords, PlatformRun, PlatformThread, RunBase, RunStatus, ThreadStatus } from "../checkpoints/platform-records.ts";
import type { Config } from "../config/schema.ts";
import { FORBIDDEN_AGENT_CONFIG_KEYS } from "../contract/requests.ts";
import type { RunCreateRequest, StreamMode } from "../contract/platform.ts";
import type { RunCanceller } from "../coordination/cancel/run-canceller.ts";
import { AgentRun, type RunEvents, type RunReporting } from "../conversations/agent-run.ts";
import type { Conversation } from "../conversations/conversation-service.ts";
import type { Turns, UnderLock } from "../conversations/turns.ts";
import { ServiceError } from "../errors/service-error.ts";
import type { Logger } from "../observability/logger.ts";
import { runEnvelope, type PreparedRun } from "../runs/prepare.ts";
import { classifyRunError } from "../runs/run-failure.ts";
import type { Assistants } from "./assistants.ts";
import type { PlatformCaller, PlatformThreads } from "./platform-threads.ts";
import { RunWatch } from "./run-watch.ts";
import { platformChunks, servedMode, type PlatformEvent, type RunOutcome, type RunRecording } from "./run-chunks.ts";
import { stateFromWire } from "./wire-values.ts";

export interface PlatformRunsDependencies {
  readonly config: Config;
  readonly threads: PlatformThreads;
  readonly records: PlatformRecords;
  readonly assistants: Assistants;
  readonly turns: Turns;
  readonly reporting: RunReporting;
  readonly canceller: RunCanceller;
  /** Each user's fair share; absent (or off), runs are not admitted by it. */
  readonly fairShare?: FairShare;
}

/** A run already admitted under its user's fair share (PlatformRuns.admit), and its ticket (undefined: no limit applies). */
export interface Admitted {
  readonly ticket: RunTicket | undefined;
}

/** How a run is made beyond its request (PlatformRuns.create). */
export interface RunMaking {
  /** The run is a background run, executing. */
  readonly background?: BackgroundExecution | undefined;
  /** Its fair share was taken already. */
  readonly admitted?: Admitted | undefined;
  /**
   * Nobody reads its events (`/runs/wait`): only its outcome, so its graph's chunks are not turned
   * into wire events along the way, and its end state is turned into wire JSON once.
   */
  readonly answerOnly?: boolean;
  /** The run's thread as its maker has just read it (a background run's, with its record): not read again. */
  readonly thread?: PlatformThread | undefined;
}

/**
 * What a background run brings to its execution: the id it was accepted under, which attempt this
 * is, and when it was accepted. `writesEnd` says, once the run's events have ended, whether this
 * execution records how it ended (false when the run is handed back to the queue, or another worker
 * took it over).
 */
export interface BackgroundExecution {
  readonly runId: string;
  /** The `traceparent` of the request that accepted it. */
  readonly createdBy?: string | undefined;
  readonly attempt: number;
  readonly createdAt: number;
  /** Asked once its events have ended (Execution.writesEnd); the same answer each time. */
  writesEnd(): Promise<boolean>;
  /**
   * The run starts: called under its thread's lock, before it writes anything. Rejects when the
   * run is no longer this worker's (taken over, or out of the queue): then it does not run.
   */
  started(base: string): Promise<void>;
}

/** A Platform run made for a request: the agenthost run, where it is, and what it answers when it ends. */
export interface PlatformRunHandle {
  readonly run: AgentRun;
  readonly threadId: string;
  /** True for `/runs/stream` and `/runs/wait`: the thread is the run's own. */
  readonly stateless: boolean;
  readonly outcome: RunOutcome;
  /** The run's events, once it holds its thread (refusals are thrown from here). */
  events(): Promise<RunEvents<PlatformEvent>>;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** A run as the Platform API answers it. */
export interface WireRun {
  readonly run_id: string;
  readonly thread_id: string;
  readonly assistant_id: string;
  readonly created_at: string;
  readonly updated_at: string;
  readonly status: RunStatus;
  readonly metadata: Record<string, unknown>;
  readonly kwargs: Record<string, unknown>;
  readonly multitask_strategy: string;
}

export function wireRun(run: PlatformRun, assistantId: string): WireRun {
  return {
    run_id: run.runId,
    thread_id: run.threadId,
    assistant_id: assistantId,
    created_at: iso(run.createdAt),
    updated_at: iso(run.updatedAt),
    status: run.status,
    metadata: run.metadata,
    kwargs: run.kwargs,
    multitask_strategy: run.multitaskStrategy,
  };
}

/** The SDK's modes for a request: its list, one mode, or `values` by default. */
function modesOf(body: RunCreateRequest): StreamMode[] {
  const asked = body.stream_mode ?? ["values"];
  return Array.isArray(asked) ? asked : [asked];
}

/**
 * Refuse, before anything is stored, the options this release does not serve (each answered
 * 422 not_supported naming it): background work (enqueue, delayed runs, webhooks) on a run that is
 * not a background run, and the stream modes without a graph mode behind them.
 */
export function refuseUnserved(body: RunCreateRequest, background = false): void {
  const refuse = (what: string) => {
    throw new ServiceError("not_supported", { detail: `${what} is not supported by agenthost yet.` });
  };
  if (!background && body.multitask_strategy === "enqueue") refuse('multitask_strategy "enqueue" on a run that is not a background run (POST /threads/{thread_id}/runs)');
  if (!background && body.after_seconds) refuse("after_seconds on a run that is not a background run (POST /threads/{thread_id}/runs)");
  if (!background && body.webhook) refuse("webhook on a run that is not a background run (POST /threads/{thread_id}/runs)");
  if (body.durability === "exit") refuse('durability "exit"');
  for (const mode of modesOf(body)) if (!servedMode(mode)) refuse(`stream_mode "${mode}"`);
}

/** The caller's configurable keys, without the ones the service sets (identity, checkpoint selectors, internals). */
function callerConfigurable(body: RunCreateRequest): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body.config?.configurable ?? {})) {
    if (FORBIDDEN_AGENT_CONFIG_KEYS.has(key) || key.startsWith("__")) continue;
    out[key] = value;
  }
  return out;
}

/** The graph input a run asks for: a Command, the state it sends (messages as LangChain messages), or null to continue. */
function inputOf(body: RunCreateRequest): PreparedRun["input"] {
  if (body.command) {
    const { resume, update, goto } = body.command;
    const updateState = update && typeof update === "object" && !Array.isArray(update) ? stateFromWire(update as Record<string, unknown>, "command.update") : update;
    return new Command({
      ...(resume !== undefined ? { resume } : {}),
      ...(updateState !== undefined ? { update: updateState as Record<string, unknown> } : {}),
      ...(goto !== undefined ? { goto: goto as string } : {}),
    });
  }
  if (body.input === null || body.input === undefined) return null;
  if (Array.isArray(body.input)) throw new ServiceError("validation_failed", { detail: "input must be an object of graph state (or null)." });
  return stateFromWire(body.input, "input");
}

/**
 * Runs of the LangGraph Platform API (streamed and waited, on a thread or stateless) as agenthost
 * runs: the same lock, admission, deadline, cancel, metrics, span and log line as a run of
 * agenthost's own API, on the same conversation. Each run is recorded (status, times) for
 * `GET /threads/{id}/runs`; the thread is `busy` while it runs and ends `idle`, `interrupted` or
 * `error`.
 */
export class PlatformRuns {
  private readonly watch = new RunWatch();

  constructor(private readonly deps: PlatformRunsDependencies) {}

  /**
   * The caller's fair share for a streamed or waited run about to be made: its request counted (a
   * trusted caller's), the user's day of tokens checked and a run slot taken, or the refusal thrown.
   * Asked before anything of the run happens (its thread made, the thread's other runs stopped), so
   * a refused run leaves nothing behind. Undefined when fair share is off or sets no limit for the user.
   */
  async admit(caller: PlatformCaller): Promise<RunTicket | undefined> {
    const { fairShare, threads } = this.deps;
    if (!fairShare?.on) return undefined;
    return fairShare.run({ user: threads.userOf(caller), countsRequest: caller.principal.boundUserId === undefined });
  }

  /**
   * A background run's slot under its user's fair share as it is about to execute (its request and
   * budget were counted when it was accepted). A user at the run limit has it refused with
   * user_run_limit, which the background runs answer by leaving it queued.
   */
  private async backgroundSlot(caller: PlatformCaller): Promise<RunTicket | undefined> {
    const { fairShare, threads } = this.deps;
    if (!fairShare?.on) return undefined;
    const slot = await fairShare.slot(threads.userOf(caller));
    if (slot === "busy") throw new ServiceError("user_run_limit", { detail: "The user has as many runs in progress as its fair share allows; the run waits in its queue." });
    return slot;
  }

  /**
   * Make a run of `body` on the caller's thread `threadId` (undefined: a stateless run, on a thread of
   * its own that is deleted after it unless on_completion is "keep"). Its fair share is `admitted`
   * (see admit), or taken here first; a run that cannot be made gives its ticket back.
   */
  async create(
    caller: PlatformCaller,
    threadId: string | undefined,
    body: RunCreateRequest,
    control: AbortController,
    logger: Logger,
    making: RunMaking = {},
  ): Promise<PlatformRunHandle> {
    const { background, admitted } = making;
    refuseUnserved(body, background !== undefined);
    const { fairShare } = this.deps;
    const ticket = admitted ? admitted.ticket : !fairShare?.on ? undefined : background ? await this.backgroundSlot(caller) : await this.admit(caller);
    if (!ticket) return this.made(caller, threadId, body, control, logger, making, undefined);
    try {
      return await this.made(caller, threadId, body, control, logger, making, ticket);
    } catch (error) {
      await ticket?.release();
      throw error;
    }
  }

  private async made(
    caller: PlatformCaller,
    threadId: string | undefined,
    body: RunCreateRequest,
    control: AbortController,
    logger: Logger,
    { background, answerOnly, thread }: RunMaking,
    ticket: RunTicket | undefined,
  ): Promise<PlatformRunHandle> {
    const { config } = this.deps;
    // The strategy for runs already on the thread (interrupt, rollback) was applied before this.
    const { conversation, stateless } = await this.placed(caller, threadId, body, thread);

    const envelope = runEnvelope(
      config,
      conversation,
      caller.principal,
      { recursion_limit: body.config?.recursion_limit ?? undefined },
      callerConfigurable(body),
      background?.runId,
    );
    const checkpointId = body.checkpoint_id ?? body.checkpoint?.checkpoint_id ?? undefined;
    const graphConfig = {
      ...envelope.graphConfig,
      configurable: { ...envelope.graphConfig.configurable, ...(checkpointId ? { checkpoint_id: checkpointId } : {}) },
      metadata: { ...(body.metadata ?? {}), ...envelope.graphConfig.metadata },
      ...(body.context ? { context: body.context } : {}),
      ...(body.interrupt_before ? { interruptBefore: body.interrupt_before } : {}),
      ...(body.interrupt_after ? { interruptAfter: body.interrupt_after } : {}),
      ...(body.config?.tags ? { tags: body.config.tags } : {}),
      ...(body.durability === "sync" || body.durability === "async" ? { durability: body.durability } : {}),
    };
    // The Platform API's `reject` refuses a busy thread at once, as LangGraph's server does: a client
    // that sends the checkpoint it saw (Agent Chat UI does) must not run on it after another run has
    // moved the thread on. A background run goes back to its queue when its thread is busy.
    const refusesBusy = background !== undefined || (body.multitask_strategy ?? "reject") === "reject";
    const prepared: PreparedRun = { ...envelope, graphConfig, input: inputOf(body), checkInterrupts: false, refusesBusy, createdBy: background?.createdBy };
    const outcome: RunOutcome = { values: undefined, interrupts: [] };
    // Where the run starts, read under the lock: a rollback takes the thread back there.
    let base: RunBase | undefined;
    const noteBase: UnderLock = (run, head) => {
      base = { checkpointId: head.checkpointId ?? null, writes: head.pendingWrites.map(([task, channel]) => [task, channel] as const) };
      // Only a background run waits here (its queue marks it started); a run of a request goes on at once.
      return background ? background.started(head.checkpointId ?? "").then(() => run) : run;
    };
    const run = new AgentRun(this.deps.turns, this.deps.reporting, conversation, prepared, control, noteBase, logger, ticket && (async () => ticket));
    const recording = this.recorder(conversation, prepared, body, outcome, background, () => base);
    const executor = platformChunks(answerOnly ? [] : modesOf(body), body.stream_subgraphs === true, outcome, background?.attempt, recording);
    return {
      run,
      threadId: conversation.threadId,
      stateless,
      outcome,
      events: () => run.streamed(executor),
    };
  }

  /**
   * Where a run of `body` goes: the caller's thread `threadId` (created first when asked to with
   * `if_not_exists: "create"`), or a new thread of its own (undefined: a stateless run), bound to
   * the run's agent. `created`: this call made the thread, so it has no runs yet. `known`: the
   * thread's record as the caller has just read it.
   */
  async placed(
    caller: PlatformCaller,
    threadId: string | undefined,
    body: RunCreateRequest,
    known?: PlatformThread,
  ): Promise<{ readonly conversation: Conversation; readonly stateless: boolean; readonly created: boolean }> {
    const { threads, assistants } = this.deps;
    const agent = assistants.agentOf(body.assistant_id, caller.principal);
    const stateless = threadId === undefined;
    let placement;
    if (known) {
      placement = { thread: known, created: false };
    } else if (threadId === undefined) {
      placement = await threads.createRecord(caller, { thread_id: randomUUID(), graph_id: agent.name, metadata: body.metadata ?? {} });
    } else if (body.if_not_exists === "create") {
      placement = await threads.open(caller, threadId, agent, body.metadata ?? {});
    } else {
      placement = { thread: await threads.record(caller, threadId), created: false };
    }
    const thread = await threads.bind(placement.thread, agent);
    return { conversation: threads.conversationOf(caller, thread)!, stateless, created: placement.created };
  }

  /**
   * Once the run has ended, wherever it ran: its record is read again at once when this process
   * writes it (see recorded; not read at all when the writer names a final status), else at first
   * often and then at most every second, until its status is final, it is gone, or `signal` aborts
   * (the request's deadline, or its client leaving). A run's final status is written before it
   * frees its thread.
   */
  settled(userId: string, threadId: string, runId: string, signal: AbortSignal, seen?: RunStatus): Promise<void> {
    return this.until(userId, threadId, runId, signal, (status) => status !== "running" && status !== "pending", seen);
  }

  /**
   * Once the run has started (or ended, or is gone): a background run waits in its queue first.
   * `seen`, in both: the status the caller has just read, so the wait does not read it again first.
   */
  started(userId: string, threadId: string, runId: string, signal: AbortSignal, seen?: RunStatus): Promise<void> {
    return this.until(userId, threadId, runId, signal, (status) => status !== "pending", seen);
  }

  /**
   * This process has just written the run's record (`status`, when the writer names it): whoever
   * waits for it here (settled, started) learns it at once.
   */
  recorded(runId: string, status?: RunStatus): void {
    this.watch.changed(runId, status);
  }

  private async until(userId: string, threadId: string, runId: string, signal: AbortSignal, done: (status: RunStatus) => boolean, seen?: RunStatus): Promise<void> {
    // The run's status as last known: the caller's read, a status written here, else read again.
    let known = seen;
    for (let delay = 10; ; delay = Math.min(delay * 2, 1_000)) {
      // Watched before the read, so a change written meanwhile is not missed. Between the caller's
      // own read and the first wait only promise continuations run, so nothing written in this
      // process comes between them (a write elsewhere is found when the timer fires).
      const change = this.watch.next(runId, delay, signal);
      if (known === undefined) {
        let run: PlatformRun | undefined;
        try {
          run = await this.deps.records.getRun(userId, threadId, runId);
        } catch (error) {
          change.cancel();
          throw error;
        }
        if (!run) {
          change.cancel();
          return;
        }
        known = run.status;
      }
      if (done(known)) {
        change.cancel();
        return;
      }
      // The request's deadline (504 request_timeout) or its client leaving ends the wait, answered
      // as a run stopped for that reason would be.
      known = await change.done.catch(() => {
        throw classifyRunError(undefined, signal.reason);
      });
    }
  }

  /**
   * The run's record around its events, written under the lock: `running` and the thread `busy` as
   * it starts, then how it ended.
   */
  private recorder(
    conversation: Conversation,
    prepared: PreparedRun,
    body: RunCreateRequest,
    outcome: RunOutcome,
    background: BackgroundExecution | undefined,
    baseOf: () => RunBase | undefined,
  ): RunRecording {
    const { records } = this.deps;
    const watch = this.watch;
    const userId = conversation.userId;
    const threadId = conversation.threadId;
    return {
      async started() {
        const now = Date.now();
        // A background run's record exists since it was accepted (its kwargs are its whole request).
        const run: PlatformRun = {
          userId,
          threadId,
          runId: prepared.runId,
          agentId: conversation.agent.name,
          status: "running",
          metadata: body.metadata ?? {},
          kwargs: background ? {} : kwargsOf(body),
          multitaskStrategy: body.multitask_strategy ?? "reject",
          createdAt: now,
          updatedAt: now,
          base: baseOf() ?? null,
        };
        await records.runStarted(run, background !== undefined);
        watch.changed(run.runId, "running");
      },
      async ended(completed, signal) {
        let status: RunStatus = "error";
        let threadStatus: ThreadStatus = "error";
        if (completed) {
          status = outcome.interrupts.length ? "interrupted" : "success";
          threadStatus = outcome.interrupts.length ? "interrupted" : "idle";
        } else if (signal.aborted) {
          const reason = (signal.reason as { reason?: unknown } | undefined)?.reason;
          status = reason === "deadline" ? "timeout" : "interrupted";
          threadStatus = "idle";
        }
        // A background run handed back to the queue (or taken over) is not over: its record stays.
        if (background && !(await background.writesEnd())) return;
        // The record of how it ended must not turn a finished run into a failed one; written or
        // not, the run is over here, and its waiters in this process learn so at once.
        const written = await records.runEnded(userId, threadId, prepared.runId, status, threadStatus, Date.now()).then(
          () => true,
          () => false,
        );
        if (written) outcome.status = status;
        watch.changed(prepared.runId, status);
      },
    };
  }
}

/** What a run record echoes of its request. */
function kwargsOf(body: RunCreateRequest): Record<string, unknown> {
  return {
    input: body.input ?? null,
    command: body.command ?? null,
    config: body.config ?? {},
    context: body.context ?? {},
    stream_mode: modesOf(body),
    interrupt_before: body.interrupt_before ?? null,
    interrupt_after: body.interrupt_after ?? null,
  };
}
