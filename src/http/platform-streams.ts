/**
 * Whether a LangGraph Platform run goes on when its client leaves: asked to continue on disconnect
 * (`on_disconnect: "continue"`), or resumable (`stream_resumable`) unless told to cancel on
 * disconnect. Such a run records its events, so its client can rejoin it
 * (GET /threads/{thread_id}/runs/{run_id}/stream); any other run stops when its client leaves.
 */
export function outlivesClient(body: unknown): boolean {
  const { stream_resumable: resumable, on_disconnect: onDisconnect } = (body ?? {}) as { stream_resumable?: unknown; on_disconnect?: unknown };
  return onDisconnect === "continue" || (resumable === true && onDisconnect !== "cancel");
}
