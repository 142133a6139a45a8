import { AgentClientError, type ChatMessage, type ContentBlock, type ToolCall } from "../client/index.ts";

/** What the browser gets of a message: no feedback proof, no identity, no provider metadata. */
export interface BrowserMessage {
  type: string;
  content: string | ContentBlock[];
  run_id: string | null;
  tool_calls: ToolCall[];
  tool_call_id?: string;
  name?: string;
  /** A paused run's pending interrupts (an approval, a question), as the service lists them. */
  interrupts?: unknown[];
}

export function toBrowserMessage(message: ChatMessage): BrowserMessage {
  const view: BrowserMessage = {
    type: message.type,
    content: message.content,
    run_id: typeof message.run_id === "string" ? message.run_id : null,
    tool_calls: Array.isArray(message.tool_calls) ? message.tool_calls : [],
  };
  if (typeof message.tool_call_id === "string") view.tool_call_id = message.tool_call_id;
  if (typeof message.name === "string") view.name = message.name;
  const interrupts = message.custom_data?.interrupts;
  if (Array.isArray(interrupts) && interrupts.length > 0) view.interrupts = interrupts;
  return view;
}

/** A failure as the browser shows it. */
export interface BrowserError {
  message: string;
  kind: string;
  status: number | null;
  error_code: string | null;
  retry_after: string | null;
}

export function toBrowserError(error: unknown): BrowserError {
  if (error instanceof AgentClientError) {
    return {
      message: error.message,
      kind: error.kind,
      status: error.statusCode,
      error_code: error.errorCode,
      retry_after: error.retryAfter,
    };
  }
  return { message: "The chat page failed to reach agenthost.", kind: "internal", status: null, error_code: null, retry_after: null };
}
