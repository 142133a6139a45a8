import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { FakeChatModel } from "./fake-chat-model.ts";
import type { ModelSpec, Provider, ProviderDefaults } from "./provider-spec.ts";

export { PROVIDERS, type ModelSpec, type Provider, type ProviderDefaults } from "./provider-spec.ts";

type ModelFactory = (spec: ModelSpec, defaults: ProviderDefaults) => BaseChatModel;
type SdkProvider = Exclude<Provider, "fake">;

/** Each provider's SDK, imported only when the configuration can use that provider. */
const SDKS: Record<SdkProvider, () => Promise<ModelFactory>> = {
  openai: async () => (await import("./sdk/openai.ts")).openAiModel,
  anthropic: async () => (await import("./sdk/anthropic.ts")).anthropicModel,
  google: async () => (await import("./sdk/google.ts")).googleModel,
};

/** Builds the chat model a spec describes. Constructing makes no network call. */
export type ProviderModels = (spec: ModelSpec, defaults: ProviderDefaults) => BaseChatModel;

/**
 * Load the SDKs of `providers` (a worker that uses none of them loads none: each is hundreds of
 * milliseconds and tens of megabytes) and return what builds their models. A spec naming a provider
 * that was not loaded is a programming error: the catalog loads every provider it can be asked for.
 */
export async function loadProviderModels(providers: Iterable<Provider>): Promise<ProviderModels> {
  const factories = new Map<Provider, ModelFactory>([["fake", () => new FakeChatModel()]]);
  await Promise.all(
    [...new Set(providers)].map(async (provider) => {
      if (provider !== "fake") factories.set(provider, await SDKS[provider]());
    }),
  );
  return (spec, defaults) => {
    const factory = factories.get(spec.provider);
    if (!factory) throw new Error(`the ${spec.provider} SDK was not loaded at startup`);
    return factory(spec, defaults);
  };
}
