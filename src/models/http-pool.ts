import { Agent, fetch as undiciFetch, type Dispatcher } from "undici";
import type { Config } from "../config/schema.ts";

/** The fetch signature the provider SDKs accept in their `fetch` option. */
export type ProviderFetch = typeof globalThis.fetch;

/**
 * The worker's one HTTP client for model providers: an undici Agent (a pool per origin) built from
 * LLM_HTTP_*, and a fetch bound to it that the OpenAI and Anthropic clients receive through their
 * `fetch` option; with tracing on, each request carries the W3C `traceparent` of the model call. Closed with the runtime; after LLM_HTTP_SHUTDOWN_TIMEOUT, open connections are
 * destroyed instead of drained.
 */
export interface ProviderHttpPool {
  readonly fetch: ProviderFetch;
  /**
   * For an SDK that cannot take a fetch but sends fixed extra headers built afresh for each request
   * (Gemini's `customHeaders`): headers that, whenever they are read, hold the trace context of the
   * call being made. Absent when tracing is off.
   */
  readonly traceHeaders: Headers | undefined;
  /**
   * A fetch on the same pool whose per-attempt inactivity limit is `timeoutSeconds` instead of
   * LLM_HTTP_READ_TIMEOUT: an explicit model timeout wins over the pool's.
   */
  fetchWithTimeout(timeoutSeconds: number): ProviderFetch;
  /** The settings the pool was built with, in undici's units (milliseconds), for logs and tests. */
  readonly settings: Readonly<PoolSettings>;
  close(): Promise<void>;
}

export interface PoolSettings {
  connectionsPerOrigin: number;
  maxOrigins: number;
  keepAliveTimeoutMs: number;
  connectTimeoutMs: number;
  readTimeoutMs: number;
  shutdownTimeoutMs: number;
}

type PoolConfig = Pick<
  Config,
  | "LLM_HTTP_MAX_CONNECTIONS"
  | "LLM_HTTP_KEEPALIVE_EXPIRY"
  | "LLM_HTTP_CONNECT_TIMEOUT"
  | "LLM_HTTP_READ_TIMEOUT"
  | "LLM_HTTP_MAX_POOLS"
  | "LLM_HTTP_SHUTDOWN_TIMEOUT"
>;

const ms = (seconds: number) => Math.max(1, Math.round(seconds * 1000));

export function poolSettings(config: PoolConfig): PoolSettings {
  return {
    connectionsPerOrigin: config.LLM_HTTP_MAX_CONNECTIONS,
    maxOrigins: config.LLM_HTTP_MAX_POOLS,
    keepAliveTimeoutMs: ms(config.LLM_HTTP_KEEPALIVE_EXPIRY),
    connectTimeoutMs: ms(config.LLM_HTTP_CONNECT_TIMEOUT),
    readTimeoutMs: ms(config.LLM_HTTP_READ_TIMEOUT),
    shutdownTimeoutMs: Math.round(config.LLM_HTTP_SHUTDOWN_TIMEOUT * 1000),
  };
}

/** Where the W3C trace context of a provider call comes from (Tracing.outgoing); absent when tracing is off. */
export interface TraceContextSource {
  outgoing(): { traceparent: string; tracestate?: string } | undefined;
}

/** `headers` with the current trace context's added; undefined when there is none. */
function withTraceHeaders(source: TraceContextSource, headers?: HeadersInit): Headers | undefined {
  const outgoing = source.outgoing();
  if (!outgoing) return undefined;
  const out = new Headers(headers);
  out.set("traceparent", outgoing.traceparent);
  if (outgoing.tracestate) out.set("tracestate", outgoing.tracestate);
  return out;
}

/** `init` with the current trace context's headers added, or as it was when there is none. */
function withTraceContext(init: RequestInit | undefined, source: TraceContextSource): RequestInit | undefined {
  const headers = withTraceHeaders(source, init?.headers);
  return headers ? { ...init, headers } : init;
}

/** Headers whose contents are the current trace context at the moment they are iterated. */
class TraceContextHeaders extends Headers {
  constructor(private readonly source: TraceContextSource) {
    super();
  }

  private current(): Headers {
    return withTraceHeaders(this.source) ?? new Headers();
  }

  override entries(): ReturnType<Headers["entries"]> {
    return this.current().entries();
  }

  override [Symbol.iterator](): ReturnType<Headers["entries"]> {
    return this.current()[Symbol.iterator]();
  }

  override forEach(callback: (value: string, key: string, parent: Headers) => void): void {
    this.current().forEach((value, key) => callback(value, key, this));
  }
}

export function createProviderHttpPool(config: PoolConfig, traces?: TraceContextSource): ProviderHttpPool {
  const settings = poolSettings(config);
  const agent = new Agent({
    connections: settings.connectionsPerOrigin,
    maxOrigins: settings.maxOrigins,
    keepAliveTimeout: settings.keepAliveTimeoutMs,
    keepAliveMaxTimeout: settings.keepAliveTimeoutMs,
    connect: { timeout: settings.connectTimeoutMs },
    // Per-attempt inactivity: the wait for response headers, then between body chunks.
    headersTimeout: settings.readTimeoutMs,
    bodyTimeout: settings.readTimeoutMs,
  });
  const bind = (dispatcher: Dispatcher): ProviderFetch =>
    ((input: Parameters<ProviderFetch>[0], init?: RequestInit) =>
      undiciFetch(input as never, { ...((traces ? withTraceContext(init, traces) : init) as object), dispatcher } as never)) as unknown as ProviderFetch;
  const fetch = bind(agent);
  const fetchWithTimeout = (timeoutSeconds: number): ProviderFetch => {
    const timeout = ms(timeoutSeconds);
    return bind(
      agent.compose((dispatch) => (options, handler) => dispatch({ ...options, headersTimeout: timeout, bodyTimeout: timeout }, handler)),
    );
  };

  let closing: Promise<void> | undefined;
  return {
    fetch,
    traceHeaders: traces ? new TraceContextHeaders(traces) : undefined,
    fetchWithTimeout,
    settings,
    close: () => {
      closing ??= drainThenClose(agent, settings.shutdownTimeoutMs);
      return closing;
    },
  };
}

/** Requests running or queued on any origin's pool. */
function busy(agent: Agent): boolean {
  return Object.values(agent.stats).some((stats) => {
    const s = stats as { running?: number; pending?: number; queued?: number };
    return (s.running ?? 0) + (s.pending ?? 0) + (s.queued ?? 0) > 0;
  });
}

/**
 * Let in-flight provider calls finish for up to LLM_HTTP_SHUTDOWN_TIMEOUT, then close; past it,
 * destroy the connections (their calls fail). undici's own close() cannot be cut short once called,
 * so the wait is done here by watching the pool's counters.
 */
async function drainThenClose(agent: Agent, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (busy(agent) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
  if (busy(agent)) await agent.destroy(new Error("the provider HTTP pool was shut down"));
  else await agent.close();
}
