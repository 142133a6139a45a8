import type { BaseMessage } from "@langchain/core/messages";

/**
 * Where a run reports the model tokens it used, as the AI messages it adds say (`usage_metadata`):
 * called with each one's input plus output tokens. Set on a run only when someone counts them (a
 * user's daily token budget, src/admission/fair-share.ts); without it nothing is looked at.
 */
export type RunUsage = (tokens: number) => void;

/** The input plus output tokens an AI message reports; 0 for any other message, or one that reports none. */
export function tokensOf(message: BaseMessage): number {
  if (message.getType() !== "ai") return 0;
  const usage = (message as { usage_metadata?: { input_tokens?: unknown; output_tokens?: unknown } | null }).usage_metadata;
  if (!usage) return 0;
  const count = (value: unknown) => (typeof value === "number" && Number.isFinite(value) && value > 0 ? value : 0);
  return count(usage.input_tokens) + count(usage.output_tokens);
}
