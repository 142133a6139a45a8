import type { AgentRegistry } from "../../agents/registry.ts";
import type { ObservabilityBackend } from "./types.ts";

/**
 * Give every registered graph the backend's callback handlers, so each run is traced without the
 * routes knowing about tracing. Per-run identity (run id, user, public thread id) reaches the
 * handlers through the run's config: `runId` and `metadata` set in prepareRun.
 */
export function attachTracing(registry: AgentRegistry, backend: ObservabilityBackend): void {
  if (backend.callbacks.length === 0) return;
  for (const agent of registry.agents.values()) {
    const graph = agent.graph;
    const existing = graph.config?.callbacks;
    if (existing !== undefined && !Array.isArray(existing)) {
      throw new Error(`agent "${agent.name}" configures a callback manager; tracing needs a handler list`);
    }
    graph.config = { ...graph.config, callbacks: [...(existing ?? []), ...backend.callbacks] };
  }
}
