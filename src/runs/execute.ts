import { AIMessageChunk, isBaseMessage, type BaseMessage } from "@langchain/core/messages";
import type { ChatMessage, StreamEvent } from "../contract/messages.ts";
import { interruptMessage, interruptsOf, type PendingInterrupt } from "./interrupts.ts";
import { toChatMessage } from "./message-mapping.ts";
import type { PreparedRun } from "./prepare.ts";
import { startTogether } from "../admission/start-together.ts";
import { tokensOf } from "./usage.ts";

/** The final answer carries the feedback proof; intermediate messages (tool calls) do not. */
function present(run: PreparedRun, message: BaseMessage): ChatMessage {
  const chat = toChatMessage(message, { threadId: run.threadId, runId: run.runId });
  if (run.feedbackToken && chat.type === "ai" && chat.tool_calls.length === 0) chat.feedback_token = run.feedbackToken;
  return chat;
}

/** A paused run's answer; it is the run's final message, so it carries the proof too. */
function paused(run: PreparedRun, interrupts: readonly PendingInterrupt[]): ChatMessage {
  const chat = interruptMessage(interrupts, { threadId: run.threadId, runId: run.runId });
  if (run.feedbackToken) chat.feedback_token = run.feedbackToken;
  return chat;
}

function lastMessage(state: unknown): BaseMessage | undefined {
  const messages = (state as { messages?: unknown } | undefined)?.messages;
  if (!Array.isArray(messages)) return undefined;
  const last: unknown = messages[messages.length - 1];
  return isBaseMessage(last) ? last : undefined;
}

/** Report the tokens of the messages a run answered whole added: those of its final state after the ones it started with. */
function reportUsage(run: PreparedRun, state: unknown): void {
  const messages = (state as { messages?: unknown } | undefined)?.messages;
  if (!run.usage || !Array.isArray(messages)) return;
  for (const message of messages.slice(run.messagesBefore ?? 0)) if (isBaseMessage(message)) run.usage(tokensOf(message));
}

/** Run the graph to the end (or to an interrupt): its final state, the tokens of what the run added reported. */
export async function invokeGraph(run: PreparedRun, signal: AbortSignal): Promise<unknown> {
  await startTogether();
  const state: unknown = await run.agent.graph.invoke(run.input, { ...run.graphConfig, signal });
  reportUsage(run, state);
  return state;
}

/** Run the graph to the end (or to an interrupt) and return its final message. */
export async function invokeRun(run: PreparedRun, signal: AbortSignal): Promise<ChatMessage> {
  const state = await invokeGraph(run, signal);
  if (run.checkInterrupts) {
    const interrupts = interruptsOf((state as { __interrupt__?: unknown } | undefined)?.__interrupt__);
    if (interrupts.length) return paused(run, interrupts);
  }
  const final = lastMessage(state);
  if (!final) throw new Error(`agent "${run.agent.name}" returned no messages`);
  return present(run, final);
}

/** Messages a node added, from one `updates` payload: `{ node: { messages: [...] } }`. */
export function messagesOfUpdate(update: unknown): BaseMessage[] {
  if (typeof update !== "object" || update === null) return [];
  const out: BaseMessage[] = [];
  for (const [node, value] of Object.entries(update)) {
    if (node.startsWith("__")) continue;
    const updates = Array.isArray(value) ? value : [value];
    for (const item of updates) {
      const messages = (item as { messages?: unknown } | null | undefined)?.messages;
      for (const message of Array.isArray(messages) ? messages : [messages]) {
        if (isBaseMessage(message) && message.getType() !== "remove") out.push(message);
      }
    }
  }
  return out;
}

/**
 * The run as typed events: token text (when asked for) and each complete message a node adds,
 * in order. Errors are thrown, not yielded: the HTTP layer decides how a failure is reported.
 */
export async function* streamRun(
  run: PreparedRun,
  signal: AbortSignal,
  options: { tokens: boolean },
): AsyncGenerator<StreamEvent> {
  await startTogether();
  const streamMode = options.tokens ? (["updates", "messages"] as const) : (["updates"] as const);
  const stream = await run.agent.graph.stream(run.input, { ...run.graphConfig, signal, streamMode: [...streamMode] });
  const interrupts: PendingInterrupt[] = [];
  for await (const chunk of stream as AsyncIterable<[string, unknown]>) {
    const [mode, payload] = chunk;
    if (mode === "messages") {
      const [message] = payload as [unknown, unknown];
      if (message instanceof AIMessageChunk && typeof message.content === "string" && message.content) {
        yield { type: "token", content: message.content };
      }
    } else if (mode === "updates") {
      for (const message of messagesOfUpdate(payload)) {
        if (run.usage) run.usage(tokensOf(message));
        yield { type: "message", content: present(run, message) };
      }
      for (const item of interruptsOf((payload as { __interrupt__?: unknown } | null)?.__interrupt__)) {
        if (!interrupts.some((i) => i.id === item.id)) interrupts.push(item);
      }
    }
  }
  // A paused graph ends its stream with the interrupt, as a message event.
  if (run.checkInterrupts && interrupts.length) {
    yield { type: "message", content: paused(run, interrupts) };
  }
}
