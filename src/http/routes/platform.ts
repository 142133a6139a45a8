import type { AgentRun } from "../../conversations/agent-run.ts";
import { ServiceError } from "../../errors/service-error.ts";
import { assistantIdOf } from "../../platform/assistants.ts";
import { refuseUnserved, wireRun, type PlatformRunHandle } from "../../platform/platform-runs.ts";
import type { PlatformCaller } from "../../platform/platform-threads.ts";
import type { RunCreateRequest } from "../../contract/platform.ts";
import { failureEvents, PLATFORM_SSE } from "../event-stream.ts";
import { outlivesClient } from "../platform-streams.ts";
import type { Operation, OperationInput } from "../operation.ts";
import type { Handlers, RouteServices } from "./services.ts";

type Asked = Omit<OperationInput<Operation>, "body" | "query">;
type RunAsked = Asked & { readonly body: RunCreateRequest };

/** The caller: its principal, and for a trusted caller the user named by `X-User-Id`. */
function callerOf(asked: Pick<Asked, "principal" | "header">, configurable?: Record<string, unknown> | null): PlatformCaller {
  const header = asked.header("x-user-id");
  const fromConfig = configurable?.user_id;
  const named = header || (typeof fromConfig === "string" && fromConfig ? fromConfig : undefined);
  return { principal: asked.principal, namedUser: named };
}

/**
 * The LangGraph Platform API's handlers: parse (the route table did), call the platform services,
 * encode. A run is named before anything else (`X-Run-Id`, the request's log line, and the
 * `Content-Location` the SDK reads to find and rejoin it).
 */
export function platformHandlers(services: RouteServices): Pick<
  Handlers,
  | "ok"
  | "searchAssistants"
  | "countAssistants"
  | "getAssistant"
  | "assistantSchemas"
  | "assistantGraph"
  | "assistantSubgraphs"
  | "threadStateAtCheckpoint"
  | "createThread"
  | "searchThreads"
  | "countThreads"
  | "getThread"
  | "patchThread"
  | "deleteThread"
  | "threadState"
  | "threadStateAt"
  | "updateThreadState"
  | "threadHistory"
  | "searchThreadHistory"
  | "threadRunStream"
  | "threadRunWait"
  | "statelessRunStream"
  | "statelessRunWait"
  | "createThreadRun"
  | "createRun"
  | "listRuns"
  | "getRun"
  | "deleteRun"
  | "cancelRun"
  | "joinRun"
  | "joinRunStream"
> {
  const { assistants, threads, runs, records, background } = services.platform;

  const named = (asked: Asked, handle: PlatformRunHandle, rejoinable = false): AgentRun => {
    const { run } = handle;
    asked.announceRun(run.id);
    asked.scope.agentRun = run;
    const location = handle.stateless ? `/runs/${run.id}` : `/threads/${handle.threadId}/runs/${run.id}`;
    asked.setHeader("Content-Location", location);
    // Where the SDK reconnects a dropped stream (with Last-Event-ID): only a run that records its events.
    if (rejoinable && !handle.stateless) asked.setHeader("Location", `${location}/stream`);
    return run;
  };

  /**
   * The run of a streamed or waited request. With `interrupt` or `rollback`, the runs already on its
   * thread stop first (background runs included; see BackgroundRuns.makeRoom).
   */
  const made = async (asked: RunAsked, threadId: string | undefined, answerOnly = false) => {
    const caller = callerOf(asked, asked.body.config?.configurable);
    const strategy = asked.body.multitask_strategy;
    refuseUnserved(asked.body);
    // The user's fair share first: a refused run stops no other run and leaves nothing stored.
    const ticket = await runs.admit(caller);
    try {
      if (threadId !== undefined && (strategy === "interrupt" || strategy === "rollback")) {
        const { conversation } = await runs.placed(caller, threadId, asked.body);
        await background.makeRoom(conversation, strategy, asked.run);
      }
      return await runs.create(caller, threadId, asked.body, asked.run, asked.logger, { admitted: { ticket }, answerOnly });
    } catch (error) {
      await ticket?.release();
      throw error;
    }
  };

  /**
   * Run to the end; the thread's values when it ended (with `__interrupt__` when it paused). A run
   * refused before it started is answered with its error status; one that failed once started
   * answers 200 with `__error__` (`{error, message}`), as LangGraph's SDK reads it. A stateless run's
   * thread goes with it unless kept.
   */
  const waited = async (asked: RunAsked, threadId: string | undefined) => {
    const handle = await made(asked, threadId, true);
    named(asked, handle);
    let failure: unknown;
    try {
      const events = await handle.events();
      try {
        for await (const event of events.events) void event;
      } catch (thrown) {
        failure = thrown;
      }
    } finally {
      if (handle.stateless && asked.body.on_completion !== "keep") await forget(asked, handle);
    }
    if (failure !== undefined) {
      const { events, error } = failureEvents(failure, asked.logger, services.runtime.config.ENV_MODE === "development", PLATFORM_SSE);
      asked.scope.errorCode = error.errorCode;
      return { status: 200 as const, body: { __error__: events.at(-1)!.data } };
    }
    const values = handle.outcome.values ?? {};
    return { status: 200 as const, body: handle.outcome.interrupts.length ? { ...values, __interrupt__: handle.outcome.interrupts } : values };
  };

  const streamed = async (asked: RunAsked, threadId: string | undefined) => {
    const handle = await made(asked, threadId);
    named(asked, handle, outlivesClient(asked.body));
    const events = await handle.events();
    if (!handle.stateless || asked.body.on_completion === "keep") return events;
    // A stateless run's thread is deleted once its events have ended, whichever way.
    const inner = events.events;
    const drained = (async function* () {
      try {
        yield* inner;
      } finally {
        await forget(asked, handle);
      }
    })();
    return Object.assign(Object.create(Object.getPrototypeOf(events) as object) as typeof events, events, { events: drained });
  };

  const forget = async (asked: RunAsked, handle: PlatformRunHandle) => {
    await threads.delete(callerOf(asked, asked.body.config?.configurable), handle.threadId, new AbortController()).catch((error: unknown) => {
      asked.logger.warn({ err_type: (error as Error).name, thread_id: handle.threadId }, "stateless run's thread not deleted");
    });
  };

  /** A background run, accepted: answered at once with its record (pending), named as any run is. */
  const accepted = async (asked: RunAsked, threadId: string | undefined) => {
    const run = await background.create(callerOf(asked, asked.body.config?.configurable), threadId, asked.body, asked.logger, asked.run);
    asked.announceRun(run.run_id);
    const location = threadId === undefined ? `/runs/${run.run_id}` : `/threads/${run.thread_id}/runs/${run.run_id}`;
    asked.setHeader("Content-Location", location);
    if (threadId !== undefined) asked.setHeader("Location", `${location}/stream`);
    return { status: 200 as const, body: run };
  };

  const runOf = async (asked: Asked, threadId: string, runId: string) => {
    const caller = callerOf(asked);
    // The run and its thread in one read; without a run, the thread read on its own says which is missing.
    const found = await records.getRunWithThread(threads.userOf(caller), threadId, runId);
    if (found) return { caller, ...found };
    await threads.record(caller, threadId);
    throw new ServiceError("run_not_found", { detail: `No run "${runId}" on thread "${threadId}".` });
  };

  /** Wait for the run to end, then answer the thread's values. */
  const joined = async (asked: Asked, threadId: string, runId: string) => {
    const { caller, thread, run } = await runOf(asked, threadId, runId);
    await runs.settled(thread.userId, threadId, runId, asked.run.signal, run.status);
    const state = await threads.stateOf(caller, thread);
    const interrupts = state.interrupts;
    const values = (state.values ?? {}) as Record<string, unknown>;
    return interrupts.length ? { ...values, __interrupt__: interrupts } : values;
  };

  return {
    ok: () => ({ status: 200, body: { ok: true } }),
    searchAssistants: (asked) => ({ status: 200, body: assistants.search(asked.body ?? { limit: 10, offset: 0 }, asked.principal) }),
    countAssistants: (asked) => ({ status: 200, body: assistants.count(asked.body ?? {}, asked.principal) }),
    getAssistant: (asked) => ({ status: 200, body: assistants.get(asked.params.assistant_id!, asked.principal) }),
    assistantSchemas: (asked) => {
      const agent = assistants.agentOf(asked.params.assistant_id!, asked.principal);
      const channels = Object.keys(agent.graph.channels).filter((name) => !name.startsWith("__") && !name.startsWith("branch:"));
      const state = { type: "object", title: agent.name, properties: Object.fromEntries(channels.map((name) => [name, {}])) };
      return {
        status: 200,
        body: { graph_id: agent.name, input_schema: state, output_schema: state, state_schema: state, config_schema: null, context_schema: null },
      };
    },
    assistantGraph: async (asked) => {
      const agent = assistants.agentOf(asked.params.assistant_id!, asked.principal);
      const drawn = await agent.graph.getGraphAsync();
      return { status: 200, body: drawn.toJSON() as unknown as Record<string, unknown> };
    },
    assistantSubgraphs: (asked) => {
      assistants.agentOf(asked.params.assistant_id!, asked.principal);
      return { status: 200, body: {} };
    },
    threadStateAtCheckpoint: async (asked) => ({
      status: 200,
      body: await threads.state(callerOf(asked), asked.params.thread_id!, asked.body.checkpoint.checkpoint_id ?? undefined, asked.body.subgraphs === true),
    }),
    createThread: async (asked) => ({ status: 200, body: await threads.create(callerOf(asked), asked.body ?? {}) }),
    searchThreads: async (asked) => ({ status: 200, body: await threads.search(callerOf(asked), asked.body ?? { limit: 10, offset: 0 }) }),
    countThreads: async (asked) => ({ status: 200, body: await threads.count(callerOf(asked), asked.body ?? {}) }),
    getThread: async (asked) => ({ status: 200, body: await threads.get(callerOf(asked), asked.params.thread_id!) }),
    patchThread: async (asked) => ({ status: 200, body: await threads.patch(callerOf(asked), asked.params.thread_id!, asked.body?.metadata, asked.body?.ttl) }),
    deleteThread: async (asked) => {
      // Its background runs go with it: the queued ones leave the queue (else a thread made again
      // under its id found them there, busy), the executing one stops.
      await threads.delete(callerOf(asked), asked.params.thread_id!, asked.run, (conversation) => background.makeRoom(conversation, "interrupt", asked.run));
      return { status: 204, body: null };
    },
    threadState: async (asked) => ({
      status: 200,
      body: await threads.state(callerOf(asked), asked.params.thread_id!, undefined, asked.query.subgraphs === "true"),
    }),
    threadStateAt: async (asked) => ({
      status: 200,
      body: await threads.state(callerOf(asked), asked.params.thread_id!, asked.params.checkpoint_id!, asked.query.subgraphs === "true"),
    }),
    updateThreadState: async (asked) => ({
      status: 200,
      body: await threads.updateState(
        callerOf(asked),
        asked.params.thread_id!,
        { values: asked.body.values, asNode: asked.body.as_node, checkpointId: asked.body.checkpoint_id ?? asked.body.checkpoint?.checkpoint_id },
        asked.run,
      ),
    }),
    threadHistory: async (asked) => ({
      status: 200,
      body: await threads.history(callerOf(asked), asked.params.thread_id!, { limit: asked.query.limit, before: asked.query.before }),
    }),
    searchThreadHistory: async (asked) => {
      const body = asked.body ?? { limit: 10 };
      const before = typeof body.before === "string" ? body.before : (body.before?.checkpoint_id ?? undefined);
      return {
        status: 200,
        body: await threads.history(callerOf(asked), asked.params.thread_id!, {
          limit: body.limit,
          before,
          checkpointNs: body.checkpoint?.checkpoint_ns,
          metadata: body.metadata ?? undefined,
        }),
      };
    },
    threadRunStream: (asked) => streamed(asked, asked.params.thread_id!),
    threadRunWait: (asked) => waited(asked, asked.params.thread_id!),
    statelessRunStream: (asked) => streamed(asked, undefined),
    statelessRunWait: (asked) => waited(asked, undefined),
    createThreadRun: async (asked) => accepted(asked, asked.params.thread_id!),
    createRun: async (asked) => accepted(asked, undefined),
    listRuns: async (asked) => {
      const thread = await threads.record(callerOf(asked), asked.params.thread_id!);
      const list = await records.listRuns(thread.userId, thread.threadId, { offset: asked.query.offset, limit: asked.query.limit, status: asked.query.status });
      return { status: 200, body: list.map((run) => wireRun(run, assistantIdOf(run.agentId))) };
    },
    getRun: async (asked) => {
      const { run } = await runOf(asked, asked.params.thread_id!, asked.params.run_id!);
      return { status: 200, body: wireRun(run, assistantIdOf(run.agentId)) };
    },
    deleteRun: async (asked) => {
      const { thread, run } = await runOf(asked, asked.params.thread_id!, asked.params.run_id!);
      if (run.status === "running" || run.status === "pending") {
        throw new ServiceError("validation_failed", { detail: "The run has not finished: cancel it first." });
      }
      await records.deleteRun(thread.userId, thread.threadId, run.runId);
      return { status: 204, body: null };
    },
    cancelRun: async (asked) => {
      const { caller, thread, run } = await runOf(asked, asked.params.thread_id!, asked.params.run_id!);
      const conversation = threads.conversationOf(caller, thread);
      const action = asked.query.action ?? "interrupt";
      const wait = asked.query.wait === "1" || asked.query.wait === "true";
      if (conversation && (run.status === "running" || run.status === "pending")) {
        // A rollback is done when this answers: the run is gone and its thread as it found it.
        await background.cancel(run, conversation, action, asked.run);
        if (wait && action === "interrupt") await runs.settled(thread.userId, thread.threadId, run.runId, asked.run.signal);
      }
      return wait ? { status: 204, body: null } : { status: 202, body: null };
    },
    joinRunStream: async (asked) => {
      const caller = callerOf(asked);
      const thread = await threads.record(caller, asked.params.thread_id!);
      const conversation = threads.conversationOf(caller, thread);
      if (!conversation) throw new ServiceError("run_events_not_found");
      // A background run still in its queue has no events yet: follow it once it starts.
      const run = await records.getRun(thread.userId, thread.threadId, asked.params.run_id!);
      if (run?.status === "pending") await runs.started(thread.userId, thread.threadId, run.runId, asked.run.signal, run.status);
      // `-1` (useStream's rejoin after a reload) and no header both replay from the first event.
      const last = asked.header("last-event-id")?.trim();
      const lastEventId = last === undefined || last === "" || last === "-1" ? undefined : last;
      if (asked.query.cancel_on_disconnect === "1" || asked.query.cancel_on_disconnect === "true") {
        // The client leaving this reading stops the run (not the end of the reading, nor its deadline).
        const { signal } = asked.run;
        signal.addEventListener("abort", () => {
          if ((signal.reason as { reason?: unknown } | undefined)?.reason === "client_disconnected") {
            services.runControl.cancelKey(conversation.storageKey).catch(() => undefined);
          }
        }, { once: true });
      }
      return services.runControl.replay(
        caller.principal,
        conversation.agent,
        asked.params.run_id!,
        { thread_id: thread.threadId, user_id: caller.namedUser, lastEventId },
        asked.run.signal,
      );
    },
    joinRun: async (asked) => ({ status: 200, body: await joined(asked, asked.params.thread_id!, asked.params.run_id!) }),
  };
}
