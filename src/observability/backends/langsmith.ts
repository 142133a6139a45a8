import { LangChainTracer } from "@langchain/core/tracers/tracer_langchain";
import { Client } from "langsmith";
import type { LangsmithConfig } from "../../config/schema.ts";
import { DELIVERY_TIMEOUT_MS, type FeedbackRecord, type ObservabilityBackend } from "./types.ts";

/**
 * LangSmith through LangChain's own tracer. The root run's id is the run id (LangChain uses the
 * config's runId), so the trace id is the run id; user_id and thread_id (the public one) ride in
 * the run metadata, where LangSmith groups threads.
 */
export function createLangsmithBackend(config: LangsmithConfig): ObservabilityBackend {
  const client = new Client({
    apiKey: config.LANGSMITH_API_KEY,
    apiUrl: (config.LANGSMITH_ENDPOINT ?? "https://api.smith.langchain.com").replace(/\/+$/, ""),
    timeout_ms: DELIVERY_TIMEOUT_MS,
    // Delivery retries belong to the feedback queue; one attempt per call here.
    callerOptions: { maxRetries: 0 },
  });
  const tracer = new LangChainTracer({
    projectName: config.LANGSMITH_PROJECT ?? "default",
    // langsmith is pinned to the version the agent libraries expect; @langchain/core bundles a
    // newer copy whose Client type differs only in private members.
    client: client as never,
  });

  return {
    kind: "langsmith",
    callbacks: [tracer],
    async sendFeedback(record: FeedbackRecord, signal?: AbortSignal) {
      if (signal?.aborted) throw signal.reason;
      await client.createFeedback(record.runId, record.key, {
        feedbackId: record.id,
        score: record.score,
        ...(record.comment !== undefined ? { comment: record.comment } : {}),
        feedbackSourceType: "api",
        sourceInfo: { ...record.metadata, agent_id: record.agentId, user_id: record.userId },
      });
    },
    flush: () => client.awaitPendingTraceBatches(),
    async close() {
      await client.awaitPendingTraceBatches().catch(() => {});
    },
  };
}
