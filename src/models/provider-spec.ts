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
  /** The pool's live trace-context headers, for SDKs without a fetch option; absent when tracing is off. */
  readonly traceHeaders: Headers | undefined;
  /** LLM_HTTP_MAX_RETRIES. */
  readonly maxRetries: number;
}

/**
 * Without an explicit model timeout the SDKs' own whole-attempt timers are set out of the way: the
 * pool's per-attempt inactivity limit (LLM_HTTP_READ_TIMEOUT) and the request deadline bound the call.
 */
export const NO_SDK_TIMEOUT_MS = 24 * 60 * 60 * 1000;

/** OpenAI-compatible servers without authentication still need a non-empty key in the SDK. */
export const KEYLESS_PLACEHOLDER = "unused";

export function fetchFor(spec: ModelSpec, defaults: ProviderDefaults): ProviderFetch {
  return spec.timeout !== undefined ? defaults.fetchWithTimeout(spec.timeout) : defaults.fetch;
}
