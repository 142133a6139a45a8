import type { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { ConfigError } from "../config/load.ts";
import type { Config } from "../config/schema.ts";
import { ServiceError } from "../errors/service-error.ts";
import { FakeChatModel } from "./fake-chat-model.ts";
import type { ProviderHttpPool } from "./http-pool.ts";
import { loadProviderModels, PROVIDERS, type ModelSpec, type Provider, type ProviderDefaults } from "./providers.ts";
import {
  PROVIDER_DEFAULT_MODELS,
  isProvider,
  providerConfigured,
  providerOfModelName,
  specFromDefaults,
  specFromEnvironment,
  specFromModelConfig,
} from "./resolve.ts";

/** The request fields that choose a model. */
export interface ModelSelectionRequest {
  readonly model_config_key?: string | undefined;
  readonly model_name?: string | undefined;
  readonly model_provider?: string | undefined;
}

/**
 * The chat models a worker serves with, built once at startup: the default model, the deep agent's
 * model, one per MODEL_CONFIGS entry, and (on demand, cached) the models requests name with
 * model_name/model_provider. All provider models share the worker's HTTP pool.
 */
export interface ModelCatalog {
  /** The worker's default model: fake, MODEL_CONFIGS.default, or the provider variables. */
  readonly default: BaseChatModel;
  /** The deep agent's model: fake, MODEL_CONFIGS.deep_agent, or the provider variables. */
  readonly deepAgent: BaseChatModel;
  /**
   * The model a request selects, or undefined when it selects none. Throws a validation_failed
   * ServiceError when the selection cannot be served.
   */
  select(request: ModelSelectionRequest): BaseChatModel | undefined;
}

/** The reserved MODEL_CONFIGS keys. */
export const DEFAULT_MODEL_CONFIG_KEY = "default";
export const DEEP_AGENT_MODEL_CONFIG_KEY = "deep_agent";

const REQUEST_MODEL_CACHE = 64;

const NOTHING_CONFIGURED =
  "no chat model is configured: set USE_FAKE_MODEL=true (deterministic test model, no key needed), " +
  "or a provider key (OPENAI_API_KEY, ANTHROPIC_API_KEY or GOOGLE_API_KEY; OPENAI_BASE_URL for an OpenAI-compatible server) " +
  "with DEFAULT_MODEL naming the model, or MODEL_CONFIGS.default";

function invalid(detail: string): ServiceError {
  return new ServiceError("validation_failed", { detail });
}

/**
 * The worker's models. Only the SDKs of providers this configuration can use are loaded: those its
 * MODEL_CONFIGS and default model name, and those a request may pick by name (a provider is
 * selectable when its key or base URL is set).
 */
export async function createModelCatalog(
  config: Config,
  pool: Pick<ProviderHttpPool, "fetch" | "fetchWithTimeout" | "traceHeaders">,
  callbacks: readonly BaseCallbackHandler[] = [],
): Promise<ModelCatalog> {
  /** Every model the catalog builds carries `callbacks` (the model-call metrics): only model calls pay for them, not every step of a graph. */
  const observed = <M extends BaseChatModel>(model: M): M => {
    if (callbacks.length > 0) model.callbacks = [...callbacks];
    return model;
  };
  const defaults: ProviderDefaults = {
    fetch: pool.fetch,
    fetchWithTimeout: (seconds) => pool.fetchWithTimeout(seconds),
    traceHeaders: pool.traceHeaders,
    maxRetries: config.LLM_HTTP_MAX_RETRIES,
  };
  const problems: string[] = [];

  const configuredSpecs = new Map<string, ModelSpec>();
  for (const [name, entry] of Object.entries(config.MODEL_CONFIGS)) {
    const spec = specFromModelConfig(config, name, entry);
    if (typeof spec === "string") problems.push(spec);
    else configuredSpecs.set(name, spec);
  }
  const environment = specFromDefaults(config);
  const createUnobserved = await loadProviderModels([
    ...[...configuredSpecs.values()].map((spec) => spec.provider),
    ...(environment && typeof environment !== "string" ? [environment.provider] : []),
    ...PROVIDERS.filter((provider) => providerConfigured(config, provider)),
  ]);
  const createProviderModel: typeof createUnobserved = (spec, options) => observed(createUnobserved(spec, options));
  const configured = new Map<string, BaseChatModel>();
  for (const [name, spec] of configuredSpecs) configured.set(name, createProviderModel(spec, defaults));

  let defaultModel: BaseChatModel | undefined;
  let defaultProvider: Provider | undefined;
  if (config.USE_FAKE_MODEL) {
    defaultModel = observed(new FakeChatModel());
    defaultProvider = "fake";
  } else if (configured.has(DEFAULT_MODEL_CONFIG_KEY)) {
    defaultModel = configured.get(DEFAULT_MODEL_CONFIG_KEY);
    defaultProvider = configuredSpecs.get(DEFAULT_MODEL_CONFIG_KEY)?.provider;
  } else if (typeof environment === "string") {
    problems.push(environment);
  } else if (environment) {
    defaultModel = createProviderModel(environment, defaults);
    defaultProvider = environment.provider;
  } else if (!(DEFAULT_MODEL_CONFIG_KEY in config.MODEL_CONFIGS)) {
    problems.push(NOTHING_CONFIGURED);
  }
  if (problems.length || !defaultModel) throw new ConfigError(problems);

  // Deep agent: chosen once per worker, never by a request.
  let deepAgent: BaseChatModel;
  if (config.USE_FAKE_MODEL) deepAgent = observed(new FakeChatModel());
  else if (configured.has(DEEP_AGENT_MODEL_CONFIG_KEY)) deepAgent = configured.get(DEEP_AGENT_MODEL_CONFIG_KEY)!;
  else if (environment && typeof environment !== "string") deepAgent = createProviderModel(environment, defaults);
  else deepAgent = defaultModel;

  const byName = new Map<string, BaseChatModel>();
  const fallbackProvider = defaultProvider;

  function byModelName(name: string, providerField: string | undefined): BaseChatModel {
    let provider: Provider | undefined;
    if (providerField !== undefined) {
      if (!isProvider(providerField) || (providerField === "fake" && !config.USE_FAKE_MODEL)) {
        throw invalid(`model_provider "${providerField}" is not supported; use openai, anthropic or google.`);
      }
      provider = providerField;
    } else {
      provider = providerOfModelName(name) ?? fallbackProvider;
    }
    if (!provider || !providerConfigured(config, provider)) {
      throw invalid(`model_provider "${provider ?? "(none)"}" is not configured on this service; choose another provider or a model_config_key.`);
    }
    const cacheKey = `${provider}:${name}`;
    let model = byName.get(cacheKey);
    if (model) {
      byName.delete(cacheKey);
    } else {
      model = createProviderModel(specFromEnvironment(config, provider, name), defaults);
      if (byName.size >= REQUEST_MODEL_CACHE) byName.delete(byName.keys().next().value!);
    }
    byName.set(cacheKey, model);
    return model;
  }

  return Object.freeze({
    default: defaultModel,
    deepAgent,
    select(request: ModelSelectionRequest): BaseChatModel | undefined {
      const { model_config_key: key, model_name: name, model_provider: provider } = request;
      if (key !== undefined) {
        if (name !== undefined || provider !== undefined) {
          throw invalid("Choose the model with model_config_key or with model_name/model_provider, not both.");
        }
        const model = configured.get(key);
        if (!model) throw invalid(`model_config_key "${key}" is not a configured model.`);
        return model;
      }
      if (name !== undefined) return byModelName(name, provider);
      if (provider === undefined) return undefined;
      // model_provider alone: that provider's default model (the worker's own, when it is that provider's).
      if (provider === defaultProvider) return defaultModel;
      return byModelName(isProvider(provider) && provider !== "fake" ? PROVIDER_DEFAULT_MODELS[provider] : provider, provider);
    },
  });
}
