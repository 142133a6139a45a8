import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { INTERRUPT } from "@langchain/langgraph";
import type { RegisteredAgent } from "../agents/agent.ts";
import type { AgentRegistry } from "../agents/registry.ts";
import type { Principal } from "../auth/principal.ts";
import type { ConversationStore } from "../checkpoints/conversation-store.ts";
import type { OpenedThread, PlatformRecords, PlatformRun, PlatformThread, RunBase, ThreadSearch } from "../checkpoints/platform-records.ts";
import type { ThreadCreateRequest, ThreadSearchRequest } from "../contract/platform.ts";
import type { Conversation, ConversationService, HeldConversation } from "../conversations/conversation-service.ts";
import { ServiceError } from "../errors/service-error.ts";
import { assistantIdOf, type Assistants } from "./assistants.ts";
import { interruptsByTask, wireState, type WireCheckpoint, type WireThreadState } from "./thread-state.ts";
import { stateFromWire, wireValue } from "./wire-values.ts";

/** Who asks: the principal, and the user it acts for (its own, or the one a trusted caller named). */
export interface PlatformCaller {
  readonly principal: Principal;
  /** The user named by a trusted caller (`X-User-Id`, or a run's `config.configurable.user_id`); undefined: its own. */
  readonly namedUser: string | undefined;
}

/** A thread as the Platform API answers it. */
export interface WireThread {
  readonly thread_id: string;
  readonly created_at: string;
  readonly updated_at: string;
  readonly metadata: Record<string, unknown>;
  readonly status: PlatformThread["status"];
  readonly config: Record<string, unknown>;
  readonly values: unknown;
  readonly interrupts: Record<string, unknown[]>;
}

export interface PlatformThreadsDependencies {
  readonly records: PlatformRecords;
  readonly conversations: ConversationService;
  readonly store: ConversationStore;
  readonly assistants: Assistants;
  readonly registry: AgentRegistry;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * The LangGraph Platform API's threads over agenthost's conversations. A thread is a record (owner,
 * id, metadata, status) until its first run binds it to an agent; from then on it is the
 * conversation (user, agent, thread id) of agenthost's own API, under the same storage key and the
 * same lock, so either API reads and writes it. A conversation started with agenthost's own API is
 * found by its thread id on first use and gets its record then. Another user's thread does not
 * exist: every read and write is scoped to the caller's user.
 */
export class PlatformThreads {
  constructor(private readonly deps: PlatformThreadsDependencies) {}

  userOf(caller: PlatformCaller): string {
    return this.deps.conversations.userFor(caller.principal, caller.namedUser);
  }

  async create(caller: PlatformCaller, body: ThreadCreateRequest): Promise<WireThread> {
    return this.wire(caller, (await this.createRecord(caller, body)).thread);
  }

  /** Create the thread's record (or, with if_exists "do_nothing", find the existing one); `created` says which. */
  async createRecord(caller: PlatformCaller, body: ThreadCreateRequest): Promise<{ readonly thread: PlatformThread; readonly created: boolean }> {
    if (body.supersteps?.length) throw new ServiceError("not_supported", { detail: "Creating a thread with supersteps is not supported yet; run it, or update its state." });
    const userId = this.userOf(caller);
    const agent = body.graph_id ? this.deps.assistants.agentOf(body.graph_id, caller.principal) : undefined;
    const threadId = body.thread_id ?? randomUUID();
    const metadata = { ...(body.metadata ?? {}), ...(agent ? bindingMetadata(agent) : {}) };
    const created = await this.deps.records.createThread({
      userId,
      threadId,
      agentId: agent?.name ?? null,
      metadata,
      status: "idle",
      createdAt: Date.now(),
      ttlMs: body.ttl ?? null,
    });
    if (created) return { thread: created, created: true };
    if (body.if_exists === "do_nothing") return { thread: await this.record(caller, threadId), created: false };
    throw new ServiceError("thread_exists", { detail: `A thread "${threadId}" already exists.` });
  }

  async get(caller: PlatformCaller, threadId: string): Promise<WireThread> {
    return this.wire(caller, await this.record(caller, threadId));
  }

  /** The caller's thread (found among its conversations when it has no record yet); 404 thread_not_found otherwise. */
  async record(caller: PlatformCaller, threadId: string): Promise<PlatformThread> {
    const found = await this.find(caller, threadId);
    if (!found) throw new ServiceError("thread_not_found", { detail: `No thread "${threadId}".` });
    return found;
  }

  /** The caller's thread, as `record` finds it; undefined when there is none. */
  async find(caller: PlatformCaller, threadId: string): Promise<PlatformThread | undefined> {
    const userId = this.userOf(caller);
    const found = await this.deps.records.getThread(userId, threadId);
    if (found) return found;
    const agent = await this.conversationAgent(caller, threadId);
    if (!agent) return undefined;
    // Another request may have given it its record meanwhile: then that one is the thread's.
    const created = await this.deps.records.createThread({ userId, threadId, agentId: agent.name, metadata: bindingMetadata(agent), status: "idle", createdAt: Date.now() });
    return created ?? this.deps.records.getThread(userId, threadId);
  }

  /**
   * The caller's thread `threadId` for a run of `agent` that creates it when it is missing
   * (`if_not_exists: "create"`): its record, or a new one bound to `agent` with `metadata` (created:
   * true), in one statement on a database. A thread id a conversation of the caller's already has
   * (started through agenthost's own API), or one another request created meanwhile, is found as
   * `find` finds it.
   */
  async open(caller: PlatformCaller, threadId: string, agent: RegisteredAgent, metadata: Record<string, unknown>): Promise<OpenedThread> {
    const userId = this.userOf(caller);
    const fresh = { userId, threadId, agentId: agent.name, metadata: { ...metadata, ...bindingMetadata(agent) }, status: "idle" as const, createdAt: Date.now(), ttlMs: null };
    const opened = await this.deps.records.openThread(fresh, [...this.conversationKeys(caller, threadId).keys()]);
    if (opened) return opened;
    const found = await this.find(caller, threadId);
    return found ? { thread: found, created: false } : this.createRecord(caller, { thread_id: threadId, graph_id: agent.name, metadata, if_exists: "do_nothing" });
  }

  /** The conversation of a thread bound to an agent; undefined for a thread no run has bound yet. */
  conversationOf(caller: PlatformCaller, thread: PlatformThread): Conversation | undefined {
    if (!thread.agentId) return undefined;
    const agent = this.deps.registry.get(thread.agentId);
    if (!agent) return undefined;
    return this.deps.conversations.resolve(caller.principal, agent, { thread_id: thread.threadId, user_id: caller.namedUser });
  }

  /** Merge `metadata` into the thread's, and set its time to live (milliseconds after its last update) when given. */
  async patch(caller: PlatformCaller, threadId: string, metadata: Record<string, unknown> | null | undefined, ttlMs?: number): Promise<WireThread> {
    await this.record(caller, threadId);
    const updated = await this.deps.records.updateThread(this.userOf(caller), threadId, { metadata: metadata ?? {}, ttlMs, now: Date.now() });
    if (!updated) throw new ServiceError("thread_not_found", { detail: `No thread "${threadId}".` });
    return this.wire(caller, updated);
  }

  /**
   * Delete the thread: its conversation (under the lock, so never under a running run) and its
   * records. `first`, when the thread has a conversation: what goes before (its runs stopped).
   */
  async delete(caller: PlatformCaller, threadId: string, control: AbortController, first?: (conversation: Conversation) => Promise<void>): Promise<void> {
    const thread = await this.record(caller, threadId);
    const conversation = this.conversationOf(caller, thread);
    if (conversation) {
      await first?.(conversation);
      await this.deps.conversations.withConversation(conversation, control, () => this.deps.store.clear(conversation.storageKey));
    }
    await this.deps.records.deleteThread(thread.userId, threadId);
  }

  /**
   * Take the conversation back to where `runs` (its runs just stopped) found it, under its lock (so
   * after they have let go of it), as if they never ran: the earliest base among them is restored
   * (see ConversationStore.rewind) and their records deleted. A run with no base never started and
   * wrote nothing. The thread ends `interrupted` when the base was paused on an interrupt, else `idle`.
   */
  async rollBack(conversation: Conversation, runs: readonly PlatformRun[], control: AbortController): Promise<void> {
    const { records, store } = this.deps;
    const { userId, threadId, storageKey } = conversation;
    const held = await this.holdOnceFree(conversation, control);
    try {
      let base: RunBase | undefined;
      for (const run of runs) {
        const current = (await records.getRun(userId, threadId, run.runId))?.base ?? undefined;
        if (current && (!base || (current.checkpointId ?? "") < (base.checkpointId ?? ""))) base = current;
      }
      if (base) await store.rewind(storageKey, base, { userId, agentId: conversation.agent.name, threadId });
      for (const run of runs) await records.deleteRun(userId, threadId, run.runId);
      const paused = base?.writes.some(([, channel]) => channel === INTERRUPT) ?? false;
      await records.updateThread(userId, threadId, { status: paused ? "interrupted" : "idle", now: Date.now() });
    } finally {
      await held.release();
    }
  }

  /**
   * The conversation's lock, once the runs just told to stop have let go of it: asked for again,
   * backing off, while it is busy (whatever THREAD_QUEUE_TIMEOUT allows a waiting request), until
   * `control` aborts (the request's deadline), which answers the last refusal.
   */
  private async holdOnceFree(conversation: Conversation, control: AbortController): Promise<HeldConversation> {
    for (let delay = 5; ; delay = Math.min(delay * 2, 500)) {
      try {
        return await this.deps.conversations.hold(conversation, control);
      } catch (error) {
        if (!(error instanceof ServiceError && (error.kind === "conversation_busy" || error.kind === "conversation_queue_timeout"))) throw error;
        try {
          await sleep(delay, undefined, { signal: control.signal });
        } catch {
          throw error;
        }
      }
    }
  }

  async search(caller: PlatformCaller, body: ThreadSearchRequest): Promise<WireThread[]> {
    if (body.values && Object.keys(body.values).length) throw new ServiceError("not_supported", { detail: "Searching threads by values is not supported; search by metadata." });
    const search: ThreadSearch = {
      ...filtersOf(body),
      sortBy: body.sort_by ?? "updated_at",
      sortOrder: body.sort_order ?? "desc",
      offset: body.offset,
      limit: body.limit,
    };
    const threads = await this.deps.records.searchThreads(this.userOf(caller), search);
    const wanted = body.select ? new Set(body.select) : undefined;
    const out: WireThread[] = [];
    for (const thread of threads) {
      // A thread of an agent the caller may not use is listed without its values (reading it is 403).
      const usable = thread.agentId === null || this.deps.conversations.mayUse(caller.principal, thread.agentId);
      const wire = await this.wire(caller, thread, usable && (wanted ? wanted.has("values") || wanted.has("interrupts") : true));
      out.push(wanted ? (Object.fromEntries(Object.entries(wire).filter(([key]) => wanted.has(key))) as unknown as WireThread) : wire);
    }
    return out;
  }

  count(caller: PlatformCaller, body: Pick<ThreadSearchRequest, "metadata" | "status" | "values">): Promise<number> {
    if (body.values && Object.keys(body.values).length) throw new ServiceError("not_supported", { detail: "Counting threads by values is not supported; count by metadata." });
    return this.deps.records.countThreads(this.userOf(caller), filtersOf(body));
  }

  /** The thread's state now, or at `checkpointId`. A thread no run has bound has empty values. */
  async state(caller: PlatformCaller, threadId: string, checkpointId?: string, subgraphs = false): Promise<WireThreadState> {
    return this.stateOf(caller, await this.record(caller, threadId), checkpointId, subgraphs);
  }

  /** The state of a thread whose record the caller has read already (see state). */
  async stateOf(caller: PlatformCaller, thread: PlatformThread, checkpointId?: string, subgraphs = false): Promise<WireThreadState> {
    const conversation = this.conversationOf(caller, thread);
    if (!conversation) return emptyState();
    const snapshot = await conversation.agent.graph.getState(
      { configurable: { thread_id: conversation.storageKey, ...(checkpointId ? { checkpoint_id: checkpointId } : {}) } },
      { subgraphs },
    );
    return wireState(snapshot, thread.threadId, conversation.storageKey);
  }

  /** The id of the thread's latest checkpoint; undefined when it has none (or no run has bound it). */
  async latestCheckpoint(caller: PlatformCaller, threadId: string): Promise<string | undefined> {
    const conversation = this.conversationOf(caller, await this.record(caller, threadId));
    return conversation && (await this.deps.store.head(conversation.storageKey)).checkpointId;
  }

  /** The thread's checkpoints, newest first: at most `limit`, those before `before` when given. */
  async history(caller: PlatformCaller, threadId: string, options: { limit: number; before?: string | undefined; checkpointNs?: string | undefined; metadata?: Record<string, unknown> | undefined }): Promise<WireThreadState[]> {
    const thread = await this.record(caller, threadId);
    const conversation = this.conversationOf(caller, thread);
    if (!conversation) return [];
    const states: WireThreadState[] = [];
    const config = { configurable: { thread_id: conversation.storageKey, checkpoint_ns: options.checkpointNs ?? "" } };
    const filter = options.metadata && Object.keys(options.metadata).length ? options.metadata : undefined;
    for await (const snapshot of conversation.agent.graph.getStateHistory(config, {
      limit: options.limit,
      ...(options.before ? { before: { configurable: { thread_id: conversation.storageKey, checkpoint_id: options.before } } } : {}),
      ...(filter ? { filter } : {}),
    })) {
      states.push(wireState(snapshot, threadId, conversation.storageKey));
    }
    return states;
  }

  /**
   * Write `values` as a new checkpoint (as `asNode` when given), under the conversation's lock. A
   * thread no run has bound cannot take an update: nothing says which agent's state it would be.
   */
  async updateState(
    caller: PlatformCaller,
    threadId: string,
    update: { values: unknown; asNode?: string | null | undefined; checkpointId?: string | null | undefined },
    control: AbortController,
  ): Promise<{ checkpoint: WireCheckpoint }> {
    const thread = await this.record(caller, threadId);
    const conversation = this.conversationOf(caller, thread);
    if (!conversation) {
      throw new ServiceError("validation_failed", { detail: "The thread has no assistant yet: run it once (or create it with graph_id) before updating its state." });
    }
    const values = update.values && typeof update.values === "object" && !Array.isArray(update.values) ? stateFromWire(update.values as Record<string, unknown>, "values") : update.values;
    const next = await this.deps.conversations.withConversation(conversation, control, () =>
      conversation.agent.graph.updateState(
        { configurable: { thread_id: conversation.storageKey, ...(update.checkpointId ? { checkpoint_id: update.checkpointId } : {}) } },
        values,
        update.asNode ?? undefined,
      ),
    );
    await this.deps.records.updateThread(thread.userId, threadId, { now: Date.now() });
    const id: unknown = next.configurable?.checkpoint_id;
    return { checkpoint: { thread_id: threadId, checkpoint_ns: "", checkpoint_id: typeof id === "string" ? id : null, checkpoint_map: null } };
  }

  /** Bind a thread to the agent of its first run; a thread bound to another agent is refused. */
  async bind(thread: PlatformThread, agent: RegisteredAgent): Promise<PlatformThread> {
    if (thread.agentId === agent.name) return thread;
    if (thread.agentId) {
      throw new ServiceError("thread_agent_mismatch", { detail: `Thread "${thread.threadId}" is a conversation with assistant "${thread.agentId}".` });
    }
    // Bind first, then stamp the metadata only if this bind won (another run may have bound it meanwhile).
    const bound = await this.deps.records.updateThread(thread.userId, thread.threadId, { agentId: agent.name, now: Date.now() });
    if (bound?.agentId !== agent.name) {
      throw new ServiceError("thread_agent_mismatch", { detail: `Thread "${thread.threadId}" is a conversation with another assistant.` });
    }
    return (await this.deps.records.updateThread(thread.userId, thread.threadId, { metadata: bindingMetadata(agent), now: Date.now() })) ?? bound;
  }

  async wire(caller: PlatformCaller, thread: PlatformThread, withValues = true): Promise<WireThread> {
    const state = withValues ? await this.stateOrEmpty(caller, thread) : undefined;
    return {
      thread_id: thread.threadId,
      created_at: iso(thread.createdAt),
      updated_at: iso(thread.updatedAt),
      metadata: wireValue(thread.metadata) as Record<string, unknown>,
      status: thread.status === "idle" && state && Object.keys(interruptsByTask(state)).length ? "interrupted" : thread.status,
      config: {},
      values: state?.values ?? null,
      interrupts: state ? interruptsByTask(state) : {},
    };
  }

  private async stateOrEmpty(caller: PlatformCaller, thread: PlatformThread): Promise<WireThreadState | undefined> {
    const conversation = this.conversationOf(caller, thread);
    if (!conversation) return undefined;
    const snapshot = await conversation.agent.graph.getState({ configurable: { thread_id: conversation.storageKey } });
    return wireState(snapshot, thread.threadId, conversation.storageKey);
  }

  /** The agent of the caller's conversation with this thread id started through agenthost's own API, if any (the most recently written). */
  private async conversationAgent(caller: PlatformCaller, threadId: string): Promise<RegisteredAgent | undefined> {
    const candidates = this.conversationKeys(caller, threadId);
    let best: { agent: RegisteredAgent; checkpointId: string } | undefined;
    for (const [storageKey, checkpointId] of await this.deps.store.latestOf([...candidates.keys()])) {
      if (!best || checkpointId > best.checkpointId) best = { agent: candidates.get(storageKey)!, checkpointId };
    }
    return best?.agent;
  }

  /** The storage key of the caller's conversation with this thread id under each agent the caller may use (one it may not use has none of theirs). */
  private conversationKeys(caller: PlatformCaller, threadId: string): Map<string, RegisteredAgent> {
    const keys = new Map<string, RegisteredAgent>();
    for (const agent of this.deps.registry.agents.values()) {
      if (!this.deps.conversations.mayUse(caller.principal, agent.name)) continue;
      keys.set(this.deps.conversations.resolve(caller.principal, agent, { thread_id: threadId, user_id: caller.namedUser }).storageKey, agent);
    }
    return keys;
  }
}

/** What a thread bound to an agent says of it in its metadata, as LangGraph's server writes it. */
export function bindingMetadata(agent: RegisteredAgent): Record<string, unknown> {
  return { graph_id: agent.name, assistant_id: assistantIdOf(agent.name) };
}

function filtersOf(body: Pick<ThreadSearchRequest, "metadata" | "status"> & { ids?: readonly string[] | null | undefined }): Omit<ThreadSearch, "sortBy" | "sortOrder" | "offset" | "limit"> {
  return {
    ...(body.metadata && Object.keys(body.metadata).length ? { metadata: body.metadata } : {}),
    ...(body.status ? { status: body.status } : {}),
    // An empty list filters nothing, as LangGraph's server reads it.
    ...(body.ids?.length ? { ids: body.ids } : {}),
  };
}

/** The state of a thread no run has bound: no values, no checkpoint (as LangGraph's server answers it). */
function emptyState(): WireThreadState {
  return {
    values: {},
    next: [],
    checkpoint: null,
    metadata: null,
    created_at: null,
    parent_checkpoint: null,
    tasks: [],
    interrupts: [],
  };
}
