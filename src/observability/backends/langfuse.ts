import { randomBytes } from "node:crypto";
import type { Serialized } from "@langchain/core/load/serializable";
import type { ChainValues } from "@langchain/core/utils/types";
import { context, trace, TraceFlags } from "@opentelemetry/api";
import { BasicTracerProvider } from "@opentelemetry/sdk-trace-base";
import { LangfuseClient } from "@langfuse/client";
import { CallbackHandler } from "@langfuse/langchain";
import { LangfuseSpanProcessor } from "@langfuse/otel";
import { getLangfuseTracerProvider, setLangfuseTracerProvider } from "@langfuse/tracing";
import type { LangfuseConfig } from "../../config/schema.ts";
import { ensureContextManager } from "../otel-context.ts";
import { DELIVERY_TIMEOUT_MS, type FeedbackRecord, type ObservabilityBackend } from "./types.ts";

/** Langfuse trace ids are 32 lowercase hex digits: the run's UUID without dashes. */
export function langfuseTraceId(runId: string): string {
  return runId.replace(/-/g, "").toLowerCase();
}

/**
 * Langfuse's LangChain handler with agenthost's identities: the root run's trace id is the run id
 * (a remote parent span context pins it, as Langfuse documents for custom trace ids), and the
 * trace's user and session are the run's user and public thread id from the run metadata.
 */
class RunTraceHandler extends CallbackHandler {
  override async handleChainStart(
    chain: Serialized,
    inputs: ChainValues,
    runId: string,
    parentRunId?: string,
    tags?: string[],
    metadata?: Record<string, unknown>,
    runType?: string,
    name?: string,
  ): Promise<void> {
    if (parentRunId) return super.handleChainStart(chain, inputs, runId, parentRunId, tags, metadata, runType, name);
    const identity: Record<string, unknown> = { ...metadata };
    if (typeof metadata?.user_id === "string") identity.langfuseUserId = metadata.user_id;
    if (typeof metadata?.thread_id === "string") identity.langfuseSessionId = metadata.thread_id;
    const parent = trace.setSpanContext(context.active(), {
      traceId: langfuseTraceId(runId),
      spanId: randomBytes(8).toString("hex"),
      traceFlags: TraceFlags.SAMPLED,
      isRemote: true,
    });
    return context.with(parent, () => super.handleChainStart(chain, inputs, runId, parentRunId, tags, identity, runType, name));
  }
}

export function createLangfuseBackend(config: LangfuseConfig): ObservabilityBackend {
  const credentials = {
    publicKey: config.LANGFUSE_PUBLIC_KEY,
    secretKey: config.LANGFUSE_SECRET_KEY,
    baseUrl: (config.LANGFUSE_BASE_URL ?? "https://cloud.langfuse.com").replace(/\/+$/, ""),
  };

  // Langfuse carries trace attributes (user, session) in the OpenTelemetry context.
  ensureContextManager();
  const processor = new LangfuseSpanProcessor({ ...credentials, mediaUploadEnabled: false, timeout: DELIVERY_TIMEOUT_MS / 1000 });
  const provider = new BasicTracerProvider({ spanProcessors: [processor] });
  // An isolated provider: agenthost's traces go to Langfuse without claiming the global tracer.
  setLangfuseTracerProvider(provider);
  const client = new LangfuseClient(credentials);

  return {
    kind: "langfuse",
    callbacks: [new RunTraceHandler()],
    async sendFeedback(record: FeedbackRecord, signal?: AbortSignal) {
      await client.api.scores.create(
        {
          id: record.id,
          traceId: langfuseTraceId(record.runId),
          name: record.key,
          value: record.score,
          dataType: "NUMERIC",
          ...(record.comment !== undefined ? { comment: record.comment } : {}),
          metadata: { ...record.metadata, agent_id: record.agentId, user_id: record.userId, run_id: record.runId },
        },
        { timeoutInSeconds: DELIVERY_TIMEOUT_MS / 1000, maxRetries: 0, ...(signal ? { abortSignal: signal } : {}) },
      );
    },
    flush: () => provider.forceFlush(),
    async close() {
      await provider.shutdown().catch(() => {});
      if (getLangfuseTracerProvider() === provider) setLangfuseTracerProvider(null);
    },
  };
}
