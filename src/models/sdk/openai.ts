import type { CallbackManagerForLLMRun } from "@langchain/core/callbacks/manager";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { BaseMessage, BaseMessageChunk } from "@langchain/core/messages";
import type { ChatGenerationChunk } from "@langchain/core/outputs";
import { ChatOpenAI, ChatOpenAICompletions, type BaseChatOpenAIFields } from "@langchain/openai";
import { fetchFor, KEYLESS_PLACEHOLDER, NO_SDK_TIMEOUT_MS, type ModelSpec, type ProviderDefaults } from "../provider-spec.ts";

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

export function openAiModel(spec: ModelSpec, defaults: ProviderDefaults): BaseChatModel {
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
