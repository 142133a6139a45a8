import type { BaseCallbackHandler } from "@langchain/core/callbacks/base";

/** One piece of feedback, as every backend receives it. Ids here are computed, never taken from metadata. */
export interface FeedbackRecord {
  /** Deterministic id of this feedback (UUID format): the queue job id and the backend's record id. */
  readonly id: string;
  readonly agentId: string;
  readonly runId: string;
  readonly userId: string;
  readonly key: string;
  readonly score: number;
  readonly comment: string | undefined;
  /** The caller's ordinary metadata, with reserved id fields removed. */
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly createdAt: string;
}

export type ObservabilityKind = "empty" | "langfuse" | "langsmith";

/**
 * Where runs are traced and feedback goes. Every run gets `callbacks` (LangChain callback
 * handlers: the backend's own integration); its trace id is the run id.
 */
export interface ObservabilityBackend {
  readonly kind: ObservabilityKind;
  readonly callbacks: readonly BaseCallbackHandler[];
  /** Deliver one feedback record; rejects when the backend did not accept it. */
  sendFeedback(record: FeedbackRecord, signal?: AbortSignal): Promise<void>;
  /** Send buffered trace data now. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** Per-attempt limit on one delivery call to a backend. */
export const DELIVERY_TIMEOUT_MS = 10_000;
