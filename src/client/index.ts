/**
 * agenthost/client: a dependency-free client for the agenthost HTTP API, for Node 20+ and browsers.
 * It imports nothing outside this folder.
 */
export { AgentClient, DEFAULT_STREAM_TIMEOUT_MS, DEFAULT_TIMEOUT_MS } from "./agent-client.ts";
export type { AgentClientOptions, FetchLike } from "./agent-client.ts";
export { AgentClientError } from "./errors.ts";
export { pendingInterrupts } from "./interrupts.ts";
export type { AgentClientErrorInit, AgentClientErrorKind } from "./errors.ts";
export { newIdempotencyKey } from "./request-headers.ts";
export type { HeaderHook, OutgoingRequest } from "./request-headers.ts";
export { retryAfterMs } from "./retry-policy.ts";
export type { RetryPolicy } from "./retry-policy.ts";
export type * from "./types.ts";
