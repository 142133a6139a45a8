import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { ChatGoogleGenerativeAI } from "@langchain/google-genai";
import { KEYLESS_PLACEHOLDER, type ModelSpec, type ProviderDefaults } from "../provider-spec.ts";

/**
 * Gemini's SDK (@google/generative-ai) has no fetch option: its calls use Node's global fetch, so the
 * LLM_HTTP_* pool does not apply to them; retries and the request deadline still do. With tracing
 * on, the trace context reaches Gemini through the SDK's `customHeaders`, which it reads for each
 * request: the pool's live headers (LangChain types the option as a record and passes it on as is;
 * the SDK takes a Headers).
 */
export function googleModel(spec: ModelSpec, defaults: ProviderDefaults): BaseChatModel {
  return new ChatGoogleGenerativeAI({
    model: spec.model,
    apiKey: spec.apiKey ?? KEYLESS_PLACEHOLDER,
    ...(spec.temperature !== undefined ? { temperature: spec.temperature } : {}),
    ...(spec.maxTokens !== undefined ? { maxOutputTokens: spec.maxTokens } : {}),
    maxRetries: spec.maxRetries ?? defaults.maxRetries,
    ...(spec.baseUrl ? { baseUrl: spec.baseUrl } : {}),
    ...(defaults.traceHeaders ? { customHeaders: defaults.traceHeaders as unknown as Record<string, string> } : {}),
  });
}
