import { ChatAnthropic } from "@langchain/anthropic";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { fetchFor, KEYLESS_PLACEHOLDER, NO_SDK_TIMEOUT_MS, type ModelSpec, type ProviderDefaults } from "../provider-spec.ts";

export function anthropicModel(spec: ModelSpec, defaults: ProviderDefaults): BaseChatModel {
  return new ChatAnthropic({
    model: spec.model,
    apiKey: spec.apiKey ?? KEYLESS_PLACEHOLDER,
    ...(spec.temperature !== undefined ? { temperature: spec.temperature } : {}),
    ...(spec.maxTokens !== undefined ? { maxTokens: spec.maxTokens } : {}),
    maxRetries: spec.maxRetries ?? defaults.maxRetries,
    clientOptions: {
      fetch: fetchFor(spec, defaults),
      timeout: spec.timeout !== undefined ? spec.timeout * 1000 : NO_SDK_TIMEOUT_MS,
      ...(spec.baseUrl ? { baseURL: spec.baseUrl } : {}),
    },
  });
}
