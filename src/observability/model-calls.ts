import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import type { Serialized } from "@langchain/core/load/serializable";
import type { BaseMessage } from "@langchain/core/messages";
import type { LLMResult } from "@langchain/core/outputs";
import { BoundedLabel } from "./bounded-label.ts";
import type { ServiceMetrics } from "./metrics.ts";

/** LangChain's `ls_provider` names onto ours; anything else is "other". */
const PROVIDER_NAMES: Readonly<Record<string, string>> = {
  openai: "openai",
  azure: "openai",
  anthropic: "anthropic",
  google_genai: "google",
  google: "google",
  fake: "fake",
};

/** Distinct model names one worker labels before the rest count as "other" (requests may name any model). */
export const MODEL_LABEL_LIMIT = 50;

/** One chat model call in progress, as the metrics and the trace see it. */
export interface ModelCall {
  readonly agent: string;
  readonly provider: string;
  readonly model: string;
  readonly started: number;
  /** performance.now() of the first streamed token, if any. */
  firstToken: number | undefined;
}

/** What a trace does with model calls (tracing.ts); absent when tracing is off. */
export interface ModelCallTracer {
  start(call: ModelCall, runId: string): void;
  firstToken(runId: string, call: ModelCall): void;
  end(runId: string, outcome: { ok: true; usage: TokenUsage | undefined } | { ok: false; error: Error }): void;
}

export interface TokenUsage {
  readonly input: number | undefined;
  readonly output: number | undefined;
}

function usageOf(output: LLMResult): TokenUsage | undefined {
  const generation = output.generations[0]?.[0] as { message?: { usage_metadata?: { input_tokens?: number; output_tokens?: number } } } | undefined;
  const usage = generation?.message?.usage_metadata;
  return usage ? { input: usage.input_tokens, output: usage.output_tokens } : undefined;
}

/**
 * A LangChain callback handler on each chat model the catalog builds (src/models/catalog.ts; a
 * handler on the graph would make every step of every run pay for callbacks) that times each call: its duration and,
 * when it streams, its time to first token, by agent (the run's `agent_id` metadata), provider and
 * model (LangChain's `ls_provider` and `ls_model_name`). Handlers are awaited inline
 * (`awaitHandlers`), so the times are those of the call, not of a background queue. With a tracer,
 * each call is also a span.
 */
export class ModelCallObserver extends BaseCallbackHandler {
  name = "agenthost_model_calls";
  override awaitHandlers = true;
  override ignoreChain = true;
  override ignoreAgent = true;
  override ignoreRetriever = true;
  override ignoreCustomEvent = true;
  private readonly calls = new Map<string, ModelCall>();
  private readonly models = new BoundedLabel(MODEL_LABEL_LIMIT);

  constructor(
    private readonly metrics: ServiceMetrics,
    private readonly tracer?: ModelCallTracer,
  ) {
    super();
  }

  /** LangChain copies handlers with `new this.constructor(this)`; a copy shares this one's state. */
  override copy(): this {
    return this;
  }

  override handleChatModelStart(
    _llm: Serialized,
    _messages: BaseMessage[][],
    runId: string,
    _parentRunId?: string,
    _extraParams?: Record<string, unknown>,
    _tags?: string[],
    metadata?: Record<string, unknown>,
  ): void {
    const agent = typeof metadata?.agent_id === "string" ? metadata.agent_id : "unknown";
    const provider = PROVIDER_NAMES[String(metadata?.ls_provider).toLowerCase()] ?? "other";
    const model = this.models.of(typeof metadata?.ls_model_name === "string" ? metadata.ls_model_name : "unknown");
    const call: ModelCall = { agent, provider, model, started: performance.now(), firstToken: undefined };
    this.calls.set(runId, call);
    this.tracer?.start(call, runId);
  }

  override handleLLMNewToken(_token: string, _idx: unknown, runId: string): void {
    const call = this.calls.get(runId);
    if (!call || call.firstToken !== undefined) return;
    call.firstToken = performance.now();
    this.metrics.modelTimeToFirstToken.observe(
      { agent: call.agent, provider: call.provider, model: call.model },
      (call.firstToken - call.started) / 1000,
    );
    this.tracer?.firstToken(runId, call);
  }

  override handleLLMEnd(output: LLMResult, runId: string): void {
    if (!this.finish(runId, "ok")) return;
    this.tracer?.end(runId, { ok: true, usage: usageOf(output) });
  }

  override handleLLMError(error: Error, runId: string): void {
    if (!this.finish(runId, "error")) return;
    this.tracer?.end(runId, { ok: false, error });
  }

  private finish(runId: string, outcome: "ok" | "error"): boolean {
    const call = this.calls.get(runId);
    if (!call) return false;
    this.calls.delete(runId);
    this.metrics.modelCallDuration.observe(
      { agent: call.agent, provider: call.provider, model: call.model, outcome },
      (performance.now() - call.started) / 1000,
    );
    return true;
  }
}
