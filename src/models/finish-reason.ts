/**
 * Providers report why a completion stopped in their own words and places (OpenAI `finish_reason`,
 * Anthropic `stop_reason`, Gemini `finishReason`; on streamed messages some land in
 * additional_kwargs). The API always reports `response_metadata.finish_reason` in OpenAI's vocabulary:
 * `length` when the output limit was reached, `stop`, `tool_calls` or `content_filter`.
 */

const FINISH_REASONS: Record<string, string> = {
  length: "length",
  max_tokens: "length",
  MAX_TOKENS: "length",
  stop: "stop",
  end_turn: "stop",
  stop_sequence: "stop",
  STOP: "stop",
  tool_calls: "tool_calls",
  tool_use: "tool_calls",
  content_filter: "content_filter",
  refusal: "content_filter",
  SAFETY: "content_filter",
  RECITATION: "content_filter",
  BLOCKLIST: "content_filter",
  PROHIBITED_CONTENT: "content_filter",
  SPII: "content_filter",
};

/** The text reported when a provider refuses without saying anything. */
export const DEFAULT_REFUSAL_TEXT = "The model declined to answer this request.";

function text(value: unknown): string | undefined {
  return typeof value === "string" && value ? value : undefined;
}

/**
 * Normalise an AI message's completion details in place: `finish_reason` in the API's vocabulary,
 * and `refusal` set when the provider refused (OpenAI's refusal field, or Anthropic's `refusal`
 * stop reason, whose text is the message content or a fixed sentence). The content's text is asked
 * for only then: a message's `text` goes through LangChain's content-block translation.
 */
export function normalizeCompletion(
  responseMetadata: Record<string, unknown>,
  additionalKwargs: Record<string, unknown>,
  contentText: () => string,
): void {
  const raw =
    text(responseMetadata.finish_reason) ??
    text(responseMetadata.stop_reason) ??
    text(additionalKwargs.stop_reason) ??
    text(responseMetadata.finishReason) ??
    text(additionalKwargs.finishReason);
  if (raw !== undefined) responseMetadata.finish_reason = FINISH_REASONS[raw] ?? raw;
  const refusal = text(responseMetadata.refusal) ?? text(additionalKwargs.refusal);
  if (refusal) responseMetadata.refusal = refusal;
  else if (raw === "refusal") responseMetadata.refusal = contentText() || DEFAULT_REFUSAL_TEXT;
}
