import type { Config } from "../../config/schema.ts";
import { createLangfuseBackend } from "./langfuse.ts";
import { createLangsmithBackend } from "./langsmith.ts";
import type { ObservabilityBackend } from "./types.ts";

export type { FeedbackRecord, ObservabilityBackend, ObservabilityKind } from "./types.ts";

/** OBSERVABILITY_BACKEND=empty: no tracing; feedback is acknowledged and goes nowhere. */
export const emptyBackend: ObservabilityBackend = Object.freeze({
  kind: "empty" as const,
  callbacks: [],
  sendFeedback: async () => {},
  flush: async () => {},
  close: async () => {},
});

/** The worker's observability backend, from OBSERVABILITY_BACKEND and its settings. */
export function createObservabilityBackend(config: Config): ObservabilityBackend {
  switch (config.OBSERVABILITY_BACKEND) {
    case "empty":
      return emptyBackend;
    case "langfuse":
      return createLangfuseBackend(config);
    case "langsmith":
      return createLangsmithBackend(config);
  }
}
