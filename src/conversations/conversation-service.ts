import { randomUUID } from "node:crypto";
import type { ConversationLock } from "../coordination/locks/conversation-lock.ts";
import type { RegisteredAgent } from "../agents/agent.ts";
import type { AgentRegistry } from "../agents/registry.ts";
import type { AgentAccess } from "../auth/agent-access.ts";
import { effectiveUserId, type Principal } from "../auth/principal.ts";
import { storageKey } from "../auth/storage-key.ts";
import { ServiceError } from "../errors/service-error.ts";
import { classifyRunError } from "../runs/run-failure.ts";

/** One conversation: whose it is, with which agent, under which public thread id and storage key. */
export interface Conversation {
  readonly agent: RegisteredAgent;
  /** The effective user: the token's own, or the one a trusted caller named. */
  readonly userId: string;
  /** The public thread id the caller sees. */
  readonly threadId: string;
  /** The checkpoint thread id: always the storage key of (user, agent, thread). */
  readonly storageKey: string;
  /** The request named no thread: this conversation starts now, so nothing is stored in it yet. */
  readonly created: boolean;
}

/** How a request addresses a conversation: the thread (absent: start one) and, for trusted callers, the user. */
export interface ConversationAddress {
  readonly thread_id?: string | undefined;
  readonly user_id?: string | undefined;
}

/** The conversation held under its lock. `signal` is the run's: it aborts on the caller's stop or a lost lock. */
export interface HeldConversation {
  readonly signal: AbortSignal;
  /** Free the conversation; safe to call more than once. */
  release(): Promise<void>;
}

/** Watches each run from its start until it settles (stalled-run detection for liveness). */
export interface RunWatcher {
  /** Returns the function to call when the run settles. */
  watch(signal: AbortSignal): () => void;
}

export interface ConversationServiceDependencies {
  readonly registry: AgentRegistry;
  readonly locks: ConversationLock;
  readonly runs: RunWatcher;
  /** The user a trusted caller acts as when it names none (AUTH_SERVICE_USER_ID). */
  readonly serviceUserId: string;
  /** Who may use which agent (AGENT_ACCESS); none: every agent is open. */
  readonly access?: AgentAccess;
}

/**
 * Addresses conversations and runs work on them one request at a time. This is the only place a
 * caller's identity, agent and thread become a storage key, and the only place the conversation
 * lock is taken.
 */
export class ConversationService {
  constructor(private readonly deps: ConversationServiceDependencies) {}

  /** The named agent, or the default agent when no name is given. */
  agent(name: string | undefined): RegisteredAgent {
    const wanted = name ?? this.deps.registry.defaultAgent;
    const agent = this.deps.registry.get(wanted);
    if (!agent) throw new ServiceError("unknown_agent", { detail: `No agent named "${wanted}" is registered.` });
    return agent;
  }

  /** The user a request acts for: the token's own, or the one a trusted caller named (refused when it may not). */
  userFor(principal: Principal, requested: string | undefined): string {
    return effectiveUserId(principal, requested, this.deps.serviceUserId);
  }

  /** Whether `principal` may use the agent named `agent` (AGENT_ACCESS), without refusing anything. */
  mayUse(principal: Principal, agent: string): boolean {
    return this.deps.access?.allows(principal, agent) ?? true;
  }

  /**
   * The conversation `address` selects for `principal` with `agent`. Identity comes first: a caller
   * naming a user it may not act for is refused before anything else is looked at, then a caller
   * that may not use the agent (AGENT_ACCESS).
   */
  resolve(principal: Principal, agent: RegisteredAgent, address: ConversationAddress): Conversation {
    const userId = effectiveUserId(principal, address.user_id, this.deps.serviceUserId);
    this.deps.access?.check(principal, agent.name);
    const created = address.thread_id === undefined;
    const threadId = address.thread_id ?? randomUUID();
    return { agent, userId, threadId, storageKey: storageKey(userId, agent.name, threadId), created };
  }

  /**
   * Take the conversation's lock while `run` is not aborted. A busy conversation, a full queue or an
   * expired wait is refused; an abort while waiting reports the abort's reason; a lock service that
   * cannot answer is a failure. A lost lock aborts `run`: a run has one signal, whatever stops it.
   */
  async hold(conversation: Conversation, run: AbortController, waits = true): Promise<HeldConversation> {
    let outcome;
    try {
      outcome = await this.deps.locks.acquire(conversation.storageKey, run.signal, waits);
    } catch (cause) {
      throw new ServiceError("lock_unavailable", { cause });
    }
    if (!outcome.ok) {
      if (outcome.reason === "aborted") throw classifyRunError(undefined, run.signal.reason);
      throw new ServiceError(outcome.reason === "busy" ? "conversation_busy" : "conversation_queue_timeout");
    }
    const { lease } = outcome;
    const onLost = () => run.abort(lease.lost.reason);
    if (lease.lost.aborted) onLost();
    else lease.lost.addEventListener("abort", onLost, { once: true });
    const settled = this.deps.runs.watch(run.signal);
    let released: Promise<void> | undefined;
    return {
      signal: run.signal,
      release: () => {
        if (!released) {
          lease.lost.removeEventListener("abort", onLost);
          settled();
          released = lease.release();
        }
        return released;
      },
    };
  }

  /**
   * Run `work` on the conversation, one request at a time, and settle it before the caller answers,
   * so the caller's next request never finds its own conversation busy. A conversation the request
   * itself created is locked too: its thread id is fresh, but the conversation list shows it as soon
   * as the run stores its input, and a run or an append on it must then wait for this run.
   */
  async withConversation<T>(conversation: Conversation, run: AbortController, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const held = await this.hold(conversation, run);
    try {
      return await work(held.signal);
    } finally {
      await held.release();
    }
  }
}
