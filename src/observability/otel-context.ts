import { context } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";

let installed = false;

/**
 * OpenTelemetry's active context follows async work through AsyncLocalStorage. One manager per
 * process, shared by agenthost's tracing and the Langfuse backend (whichever starts first installs it).
 */
export function ensureContextManager(): void {
  if (installed) return;
  installed = true;
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
}
