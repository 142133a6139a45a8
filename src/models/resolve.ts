import type { Config, ModelConfig } from "../config/schema.ts";
import type { ModelSpec, Provider } from "./provider-spec.ts";

/**
 * Turning configuration into model specs: MODEL_CONFIGS entries, the providers' usual environment
 * variables, and DEFAULT_MODEL. Pure functions of the Config; problems come back as text for the
 * startup refusal or the 422 detail.
 */

type RealProvider = Exclude<Provider, "fake">;

const KEY_VARIABLE: Record<RealProvider, "OPENAI_API_KEY" | "ANTHROPIC_API_KEY" | "GOOGLE_API_KEY"> = {
  openai: "OPENAI_API_KEY",
  anthropic: "ANTHROPIC_API_KEY",
  google: "GOOGLE_API_KEY",
};

/** The model each provider answers with when DEFAULT_MODEL does not name one. */
export const PROVIDER_DEFAULT_MODELS: Record<RealProvider, string> = {
  openai: "gpt-4o-mini",
  anthropic: "claude-3-5-haiku-latest",
  google: "gemini-2.0-flash",
};

/** Order in which configured providers are preferred when nothing names one. */
const PROVIDER_ORDER: readonly RealProvider[] = ["openai", "anthropic", "google"];

function envKey(config: Config, provider: RealProvider): string | undefined {
  return config[KEY_VARIABLE[provider]];
}

function envBaseUrl(config: Config, provider: RealProvider): string | undefined {
  if (provider === "openai") return config.OPENAI_BASE_URL;
  if (provider === "anthropic") return config.ANTHROPIC_BASE_URL;
  return undefined;
}

/** A provider is usable from the environment with its key, or (OpenAI-compatible, Anthropic) a base URL. */
export function providerConfigured(config: Config, provider: Provider): boolean {
  if (provider === "fake") return config.USE_FAKE_MODEL;
  return Boolean(envKey(config, provider) || envBaseUrl(config, provider));
}

export function isProvider(value: string): value is Provider {
  return value === "openai" || value === "anthropic" || value === "google" || value === "fake";
}

/** The provider a bare model name belongs to, when its name says so. */
export function providerOfModelName(name: string): RealProvider | undefined {
  if (/^(gpt-|o\d|chatgpt-|text-|davinci|babbage)/i.test(name)) return "openai";
  if (/^claude/i.test(name)) return "anthropic";
  if (/^(gemini|gemma|models\/gemini)/i.test(name)) return "google";
  return undefined;
}

/** A spec for `provider`/`model` with the provider's environment credentials. */
export function specFromEnvironment(config: Config, provider: Provider, model: string): ModelSpec {
  if (provider === "fake") return { provider, model };
  return { provider, model, apiKey: envKey(config, provider), baseUrl: envBaseUrl(config, provider) };
}

/**
 * A MODEL_CONFIGS entry as a spec: its own key and base URL, else the provider's variables. Returns
 * a problem when the entry has no way to authenticate.
 */
export function specFromModelConfig(config: Config, name: string, entry: ModelConfig): ModelSpec | string {
  const spec: ModelSpec = {
    provider: entry.provider,
    model: entry.model,
    temperature: entry.temperature,
    maxTokens: entry.max_tokens,
    timeout: entry.timeout,
    maxRetries: entry.max_retries,
  };
  if (entry.provider === "fake") return spec;
  const apiKey = entry.api_key ?? envKey(config, entry.provider);
  const baseUrl = entry.base_url ?? envBaseUrl(config, entry.provider);
  if (!apiKey && !(baseUrl && entry.provider !== "google")) {
    return `MODEL_CONFIGS.${name} (${entry.provider}) has no api_key or api_key_env, and ${KEY_VARIABLE[entry.provider]} is not set`;
  }
  return { ...spec, apiKey, baseUrl };
}

/**
 * The worker's environment default: DEFAULT_MODEL (`provider:model` or a model name) with the
 * providers' variables. Undefined when no provider is configured; a string when DEFAULT_MODEL cannot
 * be placed.
 */
export function specFromDefaults(config: Config): ModelSpec | string | undefined {
  const configured = PROVIDER_ORDER.filter((p) => providerConfigured(config, p));
  const named = config.DEFAULT_MODEL?.trim();
  if (!named) {
    const provider = configured[0];
    return provider ? specFromEnvironment(config, provider, PROVIDER_DEFAULT_MODELS[provider]) : undefined;
  }
  let provider: Provider | undefined;
  let model = named;
  const colon = named.indexOf(":");
  if (colon > 0 && isProvider(named.slice(0, colon))) {
    provider = named.slice(0, colon) as Provider;
    model = named.slice(colon + 1);
  } else {
    provider = providerOfModelName(named) ?? (configured.length === 1 ? configured[0] : undefined);
  }
  if (!provider) {
    if (configured.length === 0) return undefined;
    return `DEFAULT_MODEL "${named}" does not say its provider; write it as <provider>:<model>, e.g. openai:${named}`;
  }
  if (provider === "fake") return { provider, model };
  if (!providerConfigured(config, provider)) {
    return `DEFAULT_MODEL "${named}" is a ${provider} model, but ${KEY_VARIABLE[provider]} is not set`;
  }
  return specFromEnvironment(config, provider, model);
}

export function keyVariableOf(provider: RealProvider): string {
  return KEY_VARIABLE[provider];
}
