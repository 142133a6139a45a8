import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { ChatGoogleGenerativeAI } from "@langchain/google-genai";
import { KEYLESS_PLACEHOLDER, type ModelSpec, type ProviderDefaults } from "../provider-spec.ts";

/**
 * Gemini's SDK (@google/generative-ai) has no fetch option: its calls use Node's global fetch, so the
 * LLM_HTTP_* pool does not apply to them; retries and the request deadline still do.
 */
export function googleModel(spec: ModelSpec, defaults: ProviderDefaults): BaseChatModel {
  return new ChatGoogleGenerativeAI({
    model: spec.model,
    apiKey: spec.apiKey ?? KEYLESS_PLACEHOLDER,
    ...(spec.temperature !== undefined ? { temperature: spec.temperature } : {}),
    ...(spec.maxTokens !== undefined ? { maxOutputTokens: spec.maxTokens } : {}),
    maxRetries: spec.maxRetries ?? defaults.maxRetries,
    ...(spec.baseUrl ? { baseUrl: spec.baseUrl } : {}),
  });
}
