import { Command } from "@langchain/langgraph";
import type { ConversationHead } from "../checkpoints/conversation-store.ts";
import type { Principal } from "../auth/principal.ts";
import type { Config } from "../config/schema.ts";
import { ServiceError } from "../errors/service-error.ts";
import type { ChatMessage } from "../contract/messages.ts";
import type { ResumeRequest } from "../contract/requests.ts";
import type { MessageContext } from "./message-mapping.ts";
import { runEnvelope, type PreparedRun, type RunConversation } from "./prepare.ts";

/**
 * Interrupts: a graph that calls LangGraph's `interrupt()` pauses with its state saved. The run
 * answers with an `ai` ChatMessage whose content is the interrupts' text and whose
 * `custom_data.interrupts` lists each pending interrupt's id and value. Two ways answer it: a resume
 * request naming one interrupt (`/resume`), or, as the original service did, the conversation's next
 * ordinary run, whose `input` becomes the resume values (`resumeFromInput`).
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

/** A tool-approval request of LangChain's human-in-the-loop middleware (the deep agent's approvals). */
interface ApprovalRequest {
  actionRequests: Array<{ name?: unknown }>;
  reviewConfigs?: Array<{ actionName?: unknown; allowedDecisions?: unknown }>;
}

function isApprovalRequest(value: unknown): value is ApprovalRequest {
  return Array.isArray((value as { actionRequests?: unknown } | null)?.actionRequests);
}

/** The text of one interrupt: a string value as is, a question's text, an approval request by its tools. */
function describeOne(value: unknown): string {
  if (typeof value === "string") return value;
  if (isApprovalRequest(value)) {
    const names = value.actionRequests.map((r) => String(r.name ?? "a tool"));
    return `Approval needed before running ${names.join(", ")}.`;
  }
  for (const field of ["question", "message", "text", "prompt", "description"]) {
    const text = (value as Record<string, unknown> | null)?.[field];
    if (typeof text === "string" && text) return text;
  }
  return "The agent is waiting for input.";
}

/** A paused run's answer, in the shape the original service's clients read. */
export function interruptMessage(interrupts: readonly PendingInterrupt[], context: MessageContext): ChatMessage {
  return {
    type: "ai",
    content: interrupts.map(({ value }) => describeOne(value)).join("\n\n"),
    thread_id: context.threadId,
    run_id: context.runId,
    usage_metadata: null,
    response_metadata: {},
    tool_calls: [],
    custom_data: { interrupts: interrupts.map(({ id, value }) => ({ id, value })) },
  };
}

/** Channels a task writes without having finished: its pause, its resume value, its failure. */
const UNFINISHED_CHANNELS = new Set(["__interrupt__", "__resume__", "__error__", "__error_source_node__"]);

/**
 * The interrupts pending in a conversation's latest checkpoint, from its pending writes: those of
 * tasks that have not finished since. (LangGraph's getState also lists the interrupt of a task that
 * was resumed and finished in a later run of the same step; it is not pending any more.)
 */
export function pendingInterrupts(head: ConversationHead): PendingInterrupt[] {
  const writes = head.pendingWrites;
  const finished = new Set(writes.filter(([, channel]) => !UNFINISHED_CHANNELS.has(channel)).map(([task]) => task));
  return interruptsOf(writes.filter(([task, channel]) => channel === "__interrupt__" && !finished.has(task)).flatMap(([, , value]) => value));
}

/** A resume run, before the lock: the envelope only; the Command is built under the lock. */
export function prepareResume(config: Config, conversation: RunConversation, principal: Principal): PreparedRun {
  return { ...runEnvelope(config, conversation, principal, {}), input: new Command({ resume: null }) };
}

/**
 * Under the conversation lock: check what is pending and aim the resume value at it. No pending
 * interrupt, or an interrupt_id that is not pending, is refused; with several pending, the caller
 * must name one.
 */
export function aimResume(run: PreparedRun, head: ConversationHead, body: ResumeRequest): PreparedRun {
  const pending = pendingInterrupts(head);
  if (pending.length === 0) {
    throw new ServiceError("no_pending_interrupt", {
      detail: `Conversation "${run.threadId}" has no pending interrupt to resume; start a new run instead.`,
    });
  }
  let target: string;
  if (body.interrupt_id !== undefined) {
    if (!pending.some((p) => p.id === body.interrupt_id)) {
      throw new ServiceError("interrupt_not_pending", {
        detail: `Interrupt "${body.interrupt_id}" is not pending in conversation "${run.threadId}"; pending: ${pending.map((p) => p.id).join(", ")}.`,
      });
    }
    target = body.interrupt_id;
  } else if (pending.length === 1) {
    target = pending[0]!.id;
  } else {
    throw new ServiceError("interrupt_not_pending", {
      detail: `Several interrupts are pending in conversation "${run.threadId}"; name one with interrupt_id (${pending.map((p) => p.id).join(", ")}).`,
    });
  }
  return { ...run, input: new Command({ resume: { [target]: body.resume } }) };
}

const APPROVE_WORDS = new Set(["approve", "approved", "yes", "y", "ok", "accept"]);
const REJECT_WORDS = new Set(["reject", "rejected", "no", "n", "deny"]);
const DEFAULT_REJECTION = "User rejected the action.";

type Decision = { type: "approve" } | { type: "reject"; message: string };

/**
 * A human's text as an approval decision: an approving word approves; a rejecting word, or any text
 * starting with "reject", rejects (the text after ":" is the reason); anything else is the human's
 * own answer, given to the model in place of the tool's result (LangChain's `reject` with that text).
 */
export function decisionFromText(text: string): Decision {
  const said = text.trim();
  const lower = said.toLowerCase();
  if (APPROVE_WORDS.has(lower)) return { type: "approve" };
  const colon = said.indexOf(":");
  const head = (colon >= 0 ? lower.slice(0, colon) : lower).trim();
  if (REJECT_WORDS.has(head) || lower.startsWith("reject")) {
    const reason = colon >= 0 ? said.slice(colon + 1).trim() : "";
    return { type: "reject", message: reason || DEFAULT_REJECTION };
  }
  return { type: "reject", message: said };
}

function textOf(message: unknown): string {
  if (typeof message === "string") return message;
  if (!Array.isArray(message)) return "";
  return message
    .map((block) => ((block as { type?: unknown }).type === "text" ? String((block as { text?: unknown }).text ?? "") : ""))
    .join("");
}

/** One decision per requested action, each allowed by the request's review configuration (else refused). */
function approvalAnswer(request: ApprovalRequest, text: string): { decisions: Decision[] } {
  const decision = decisionFromText(text);
  for (const action of request.actionRequests) {
    const review = request.reviewConfigs?.find((r) => r.actionName === action.name);
    const allowed = Array.isArray(review?.allowedDecisions) ? (review.allowedDecisions as unknown[]) : undefined;
    if (allowed && !allowed.includes(decision.type)) {
      throw new ServiceError("validation_failed", {
        detail: `The pending approval of ${String(action.name)} allows ${allowed.join(", ")}; answer with one of those.`,
      });
    }
  }
  return { decisions: request.actionRequests.map(() => decision) };
}

function objectOf(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/**
 * The resume values an ordinary run's `input` gives the pending interrupts, as the original service
 * read them: `input.resume` keyed by interrupt id answers those interrupts only; otherwise a tool
 * approval reads `input.message` as a decision (applied to every action it asks about), a single
 * pending interrupt takes `input.responses` when sent, and any other interrupt receives the whole
 * `input` object.
 */
export function resumeValuesFromInput(pending: readonly PendingInterrupt[], input: Record<string, unknown>): Record<string, unknown> {
  const keyed = objectOf(input.resume);
  const named = keyed ? pending.filter((p) => Object.hasOwn(keyed, p.id)) : [];
  if (keyed && named.length) return Object.fromEntries(named.map((p) => [p.id, keyed[p.id]]));
  return Object.fromEntries(
    pending.map((p) => {
      if (isApprovalRequest(p.value)) return [p.id, approvalAnswer(p.value, textOf(input.message))];
      if (pending.length === 1 && input.responses !== undefined && input.responses !== null) return [p.id, input.responses];
      return [p.id, input];
    }),
  );
}

/**
 * Under the conversation lock, for an ordinary run with CHECK_INTERRUPTS on: when the conversation
 * is paused, the run resumes it with values read from its input instead of starting a new turn.
 */
export function resumeFromInput(run: PreparedRun, head: ConversationHead, input: Record<string, unknown>): PreparedRun {
  const pending = pendingInterrupts(head);
  if (pending.length === 0) return run;
  return { ...run, input: new Command({ resume: resumeValuesFromInput(pending, input) }) };
}
