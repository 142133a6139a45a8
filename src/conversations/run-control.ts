import type { RegisteredAgent } from "../agents/agent.ts";
import type { Principal } from "../auth/principal.ts";
import { ServiceError } from "../errors/service-error.ts";
import type { RunCanceller } from "../coordination/cancel/run-canceller.ts";
import type { RunReplay } from "../coordination/run-events/event-log.ts";
import type { StreamLogs } from "../coordination/run-events/stream-logs.ts";
import type { ConversationAddress, ConversationService } from "./conversation-service.ts";

export interface RunControlDependencies {
  readonly conversations: ConversationService;
  readonly canceller: RunCanceller;
  readonly streamLogs: StreamLogs;
}

/** Where a resumed reading starts: the SSE Last-Event-ID header wins over the `after` parameter. */
function startAfter(lastEventId: string | undefined, after: number | undefined): number {
  if (lastEventId === undefined) return after ?? 0;
  if (!/^\d{1,9}$/.test(lastEventId.trim())) {
    throw new ServiceError("validation_failed", { detail: "Last-Event-ID: must be the id of an event of this run (an integer of at least 0)" });
  }
  return Number(lastEventId.trim());
}

/**
 * A run already under way, addressed through its conversation: stop it, or read its recorded events
 * again. Both go through the conversation's storage key, so only its owner (or a trusted caller naming
 * the owner) reaches the run: another user's run looks like none.
 */
export class RunControl {
  constructor(private readonly deps: RunControlDependencies) {}

  /** Stop the run holding the conversation, wherever it runs. */
  async cancel(principal: Principal, agent: RegisteredAgent, address: ConversationAddress & { thread_id: string }) {
    const conversation = this.deps.conversations.resolve(principal, agent, address);
    const runId = await this.cancelKey(conversation.storageKey);
    return { thread_id: conversation.threadId, cancelled: runId !== undefined, run_id: runId ?? null };
  }

  /** Stop the run holding the conversation of `storageKey` (already resolved for its caller); the id of the run stopped. */
  async cancelKey(storageKey: string): Promise<string | undefined> {
    try {
      return await this.deps.canceller.cancel(storageKey);
    } catch (cause) {
      throw new ServiceError("lock_unavailable", { cause, detail: "The service that reaches the run (Redis) is unavailable; the run was not stopped." });
    }
  }

  /** The run's events after the client's last one, live to the end. */
  async replay(
    principal: Principal,
    agent: RegisteredAgent,
    runId: string,
    request: ConversationAddress & { after?: number | undefined; lastEventId?: string | undefined },
    signal: AbortSignal,
  ): Promise<RunReplay> {
    const conversation = this.deps.conversations.resolve(principal, agent, request);
    const after = startAfter(request.lastEventId, request.after);
    let entries;
    try {
      entries = await this.deps.streamLogs.read(runId, conversation.storageKey, after, signal);
    } catch (cause) {
      throw new ServiceError("run_events_unavailable", { cause });
    }
    if (!entries) throw new ServiceError("run_events_not_found");
    return { agent: agent.name, after, entries };
  }
}
