import { Command } from "@langchain/langgraph";
import type { RegisteredAgent } from "../agents/agent.ts";
import type { Principal } from "../auth/principal.ts";
import type { Config } from "../config/schema.ts";
import { ApiError } from "../errors/api-error.ts";
import type { ChatMessage, ResumeRequest } from "../http/schemas.ts";
import type { MessageContext } from "./message-mapping.ts";
import { runEnvelope, type PreparedRun } from "./prepare.ts";

/**
 * Interrupts: a graph that calls LangGraph's `interrupt()` pauses with its state saved. The run
 * answers with a ChatMessage of type `interrupt` listing each pending interrupt's id and value; a
 * resume request hands a value back to one of them (`Command({resume: {[id]: value}})`).
 */
export interface PendingInterrupt {
  readonly id: string;
  readonly value: unknown;
}

/** Interrupts as LangGraph reports them (`__interrupt__` of a result or update; a task's `interrupts`). */
export function interruptsOf(value: unknown): PendingInterrupt[] {
  if (!Array.isArray(value)) return [];
  const out: PendingInterrupt[] = [];
  for (const item of value as unknown[]) {
    const id = (item as { id?: unknown } | null)?.id;
    if (typeof id === "string" && !out.some((i) => i.id === id)) out.push({ id, value: (item as { value?: unknown }).value });
  }
  return out;
}

/** A one-line summary for `content`: a string value as is, an approval request by its tools. */
function describe(interrupts: readonly PendingInterrupt[]): string {
  const texts = interrupts.map(({ value }) => {
    if (typeof value === "string") return value;
    const requests = (value as { actionRequests?: unknown } | null)?.actionRequests;
    if (Array.isArray(requests)) {
      const names = requests.map((r) => String((r as { name?: unknown }).name ?? "a tool"));
      return `Approval needed before running ${names.join(", ")}.`;
    }
    return "The agent is waiting for input.";
  });
  return texts.join("\n");
}

export function interruptMessage(interrupts: readonly PendingInterrupt[], context: MessageContext): ChatMessage {
  return {
    type: "interrupt",
    content: describe(interrupts),
    thread_id: context.threadId,
    run_id: context.runId,
    usage_metadata: null,
    response_metadata: {},
    tool_calls: [],
    interrupts: interrupts.map(({ id, value }) => ({ id, value })),
  };
}

/** The interrupts pending in a conversation's latest checkpoint. */
export async function pendingInterrupts(agent: RegisteredAgent, storageKey: string): Promise<PendingInterrupt[]> {
  const snapshot = await agent.graph.getState({ configurable: { thread_id: storageKey } });
  return interruptsOf(snapshot.tasks.flatMap((task) => task.interrupts ?? []));
}

/** A resume run, before the lock: identity and addressing only; the Command is built under the lock. */
export function prepareResume(config: Config, agent: RegisteredAgent, principal: Principal, body: ResumeRequest): PreparedRun {
  return { ...runEnvelope(config, agent, principal, body), input: new Command({ resume: null }) };
}

/**
 * Under the conversation lock: check what is pending and aim the resume value at it. No pending
 * interrupt, or an interrupt_id that is not pending, is a 409; with several pending, the caller must
 * name one.
 */
export async function aimResume(run: PreparedRun, body: ResumeRequest): Promise<PreparedRun> {
  const pending = await pendingInterrupts(run.agent, run.storageKey);
  if (pending.length === 0) {
    throw new ApiError("no_pending_interrupt", {
      detail: `Conversation "${run.threadId}" has no pending interrupt to resume; start a new run instead.`,
    });
  }
  let target: string;
  if (body.interrupt_id !== undefined) {
    if (!pending.some((p) => p.id === body.interrupt_id)) {
      throw new ApiError("interrupt_not_pending", {
        detail: `Interrupt "${body.interrupt_id}" is not pending in conversation "${run.threadId}"; pending: ${pending.map((p) => p.id).join(", ")}.`,
      });
    }
    target = body.interrupt_id;
  } else if (pending.length === 1) {
    target = pending[0]!.id;
  } else {
    throw new ApiError("interrupt_not_pending", {
      detail: `Several interrupts are pending in conversation "${run.threadId}"; name one with interrupt_id (${pending.map((p) => p.id).join(", ")}).`,
    });
  }
  return { ...run, input: new Command({ resume: { [target]: body.resume } }) };
}
