import type { Config } from "../../config/schema.ts";
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

/**
 * The worker's observability backend, from OBSERVABILITY_BACKEND and its settings. A backend's
 * libraries (Langfuse with OpenTelemetry, or the LangSmith client) are loaded only when it is chosen.
 */
export async function createObservabilityBackend(config: Config): Promise<ObservabilityBackend> {
  switch (config.OBSERVABILITY_BACKEND) {
    case "empty":
      return emptyBackend;
    case "langfuse":
      return (await import("./langfuse.ts")).createLangfuseBackend(config);
    case "langsmith":
      return (await import("./langsmith.ts")).createLangsmithBackend(config);
  }
}
