import { ChatAnthropic } from "@langchain/anthropic";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { CallbackManagerForLLMRun } from "@langchain/core/callbacks/manager";
import type { BaseMessage, BaseMessageChunk } from "@langchain/core/messages";
import type { ChatGenerationChunk } from "@langchain/core/outputs";
import { ChatGoogleGenerativeAI } from "@langchain/google-genai";
import { ChatOpenAI, ChatOpenAICompletions, type BaseChatOpenAIFields } from "@langchain/openai";
import { FakeChatModel } from "./fake-chat-model.ts";
import type { ProviderFetch } from "./http-pool.ts";

export const PROVIDERS = ["openai", "anthropic", "google", "fake"] as const;
export type Provider = (typeof PROVIDERS)[number];

/** Everything needed to build one chat model; secrets included, so never log it. */
export interface ModelSpec {
  readonly provider: Provider;
  readonly model: string;
  readonly apiKey?: string | undefined;
  readonly baseUrl?: string | undefined;
  readonly temperature?: number | undefined;
  readonly maxTokens?: number | undefined;
  /** Seconds for one provider attempt; explicit, so it wins over LLM_HTTP_READ_TIMEOUT. */
  readonly timeout?: number | undefined;
  /** Retries after the first attempt; explicit, so it wins over LLM_HTTP_MAX_RETRIES. */
  readonly maxRetries?: number | undefined;
}

export interface ProviderDefaults {
  readonly fetch: ProviderFetch;
  /** The pool's fetch with an explicit per-attempt inactivity limit (seconds). */
  readonly fetchWithTimeout: (timeoutSeconds: number) => ProviderFetch;
  /** LLM_HTTP_MAX_RETRIES. */
  readonly maxRetries: number;
}

/**
 * Without an explicit model timeout the SDKs' own whole-attempt timers are set out of the way: the
 * pool's per-attempt inactivity limit (LLM_HTTP_READ_TIMEOUT) and the request deadline bound the call.
 */
const NO_SDK_TIMEOUT_MS = 24 * 60 * 60 * 1000;

/** OpenAI-compatible servers without authentication still need a non-empty key in the SDK. */
const KEYLESS_PLACEHOLDER = "unused";

function fetchFor(spec: ModelSpec, defaults: ProviderDefaults): ProviderFetch {
  return spec.timeout !== undefined ? defaults.fetchWithTimeout(spec.timeout) : defaults.fetch;
}

type RefusalCarrier = { additional_kwargs: Record<string, unknown> };

/**
 * Two gaps of @langchain/openai's chat-completions model, filled: its converter drops the `refusal`
 * field (kept here in additional_kwargs, where the API's message mapping reads it), and a streamed
 * completion aggregated for a streaming callback (LangGraph's token stream) loses `finish_reason`,
 * which only travels in generationInfo (copied here onto the chunk's response_metadata).
 */
class CompletionsWithMetadata extends ChatOpenAICompletions {
  override async *_streamResponseChunks(
    messages: BaseMessage[],
    options: this["ParsedCallOptions"],
    runManager?: CallbackManagerForLLMRun,
  ): AsyncGenerator<ChatGenerationChunk> {
    for await (const chunk of super._streamResponseChunks(messages, options, runManager)) {
      const info = chunk.generationInfo;
      if (typeof info?.finish_reason === "string") {
        chunk.message.response_metadata = {
          ...chunk.message.response_metadata,
          finish_reason: info.finish_reason,
          ...(typeof info.model_name === "string" ? { model_name: info.model_name } : {}),
        };
      }
      yield chunk;
    }
  }

  protected override _convertCompletionsMessageToBaseMessage(
    message: Parameters<ChatOpenAICompletions["_convertCompletionsMessageToBaseMessage"]>[0],
    rawResponse: Parameters<ChatOpenAICompletions["_convertCompletionsMessageToBaseMessage"]>[1],
  ): BaseMessage {
    const converted = super._convertCompletionsMessageToBaseMessage(message, rawResponse);
    if (typeof message.refusal === "string" && message.refusal) (converted as RefusalCarrier).additional_kwargs.refusal = message.refusal;
    return converted;
  }

  protected override _convertCompletionsDeltaToBaseMessageChunk(
    delta: Record<string, unknown>,
    rawResponse: Parameters<ChatOpenAICompletions["_convertCompletionsDeltaToBaseMessageChunk"]>[1],
    defaultRole?: Parameters<ChatOpenAICompletions["_convertCompletionsDeltaToBaseMessageChunk"]>[2],
  ): BaseMessageChunk {
    const converted = super._convertCompletionsDeltaToBaseMessageChunk(delta, rawResponse, defaultRole);
    if (typeof delta.refusal === "string" && delta.refusal) (converted as RefusalCarrier).additional_kwargs.refusal = delta.refusal;
    return converted;
  }
}

function openAiModel(spec: ModelSpec, defaults: ProviderDefaults): BaseChatModel {
  const fields: BaseChatOpenAIFields = {
    model: spec.model,
    apiKey: spec.apiKey ?? KEYLESS_PLACEHOLDER,
    ...(spec.temperature !== undefined ? { temperature: spec.temperature } : {}),
    ...(spec.maxTokens !== undefined ? { maxTokens: spec.maxTokens } : {}),
    timeout: spec.timeout !== undefined ? spec.timeout * 1000 : NO_SDK_TIMEOUT_MS,
    maxRetries: spec.maxRetries ?? defaults.maxRetries,
    streamUsage: true,
    configuration: { fetch: fetchFor(spec, defaults), ...(spec.baseUrl ? { baseURL: spec.baseUrl } : {}) },
  };
  return new ChatOpenAI({ ...fields, completions: new CompletionsWithMetadata(fields) });
}

function anthropicModel(spec: ModelSpec, defaults: ProviderDefaults): BaseChatModel {
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

/**
 * Gemini's SDK (@google/generative-ai) has no fetch option: its calls use Node's global fetch, so the
 * LLM_HTTP_* pool does not apply to them; retries and the request deadline still do.
 */
function googleModel(spec: ModelSpec, defaults: ProviderDefaults): BaseChatModel {
  return new ChatGoogleGenerativeAI({
    model: spec.model,
    apiKey: spec.apiKey ?? KEYLESS_PLACEHOLDER,
    ...(spec.temperature !== undefined ? { temperature: spec.temperature } : {}),
    ...(spec.maxTokens !== undefined ? { maxOutputTokens: spec.maxTokens } : {}),
    maxRetries: spec.maxRetries ?? defaults.maxRetries,
    ...(spec.baseUrl ? { baseUrl: spec.baseUrl } : {}),
  });
}

/** Build the chat model a spec describes. Constructing makes no network call. */
export function createProviderModel(spec: ModelSpec, defaults: ProviderDefaults): BaseChatModel {
  switch (spec.provider) {
    case "openai":
      return openAiModel(spec, defaults);
    case "anthropic":
      return anthropicModel(spec, defaults);
    case "google":
      return googleModel(spec, defaults);
    case "fake":
      return new FakeChatModel();
  }
}
