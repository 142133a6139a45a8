import { chatMessageSchema } from "../contract/messages.ts";
import {
  addMessagesRequestSchema,
  clearHistoryRequestSchema,
  feedbackRequestSchema,
  historyQuerySchema,
  invokeRequestSchema,
  resumeRequestSchema,
  resumeStreamRequestSchema,
  streamRequestSchema,
} from "../contract/requests.ts";
import { cancelRequestSchema, cancelResponseSchema, runStreamQuerySchema } from "../contract/run-control.ts";
import { addMessagesResponseSchema, clearHistoryResponseSchema, feedbackResponseSchema, historyPageSchema } from "../contract/responses.ts";
import { threadListSchema, threadsQuerySchema } from "../contract/threads.ts";
import type { ErrorKind } from "./api-error.ts";
import type { Operation } from "./operation.ts";
import { ADDRESS_ERRORS, LOCK_ERRORS, RUN_ERRORS, RUN_START_ERRORS, STORAGE_ERRORS } from "./operation-errors.ts";
import { platformOperations } from "./platform-operations.ts";
import { infoResponseSchema, livenessSchema, readinessSchema } from "./service-schemas.ts";

/**
 * The route table: every operation of the API, once. The Express routes are mounted from it
 * (mount-operations.ts) and the OpenAPI document is generated from it (openapi.ts). Order matters:
 * the resume operations come before the run operations, so `/resume/stream` is the default agent's
 * resume stream, not agent "resume"'s stream. How the API reference groups, orders and exemplifies
 * the operations is reference-layout.ts's.
 *
 * `errors` lists what the handler may report; what every operation of its kind may report (the
 * token, the worker's capacity, an unknown agent, a body or query that does not parse) is added
 * from the entry's shape (see inheritedErrors).
 */

const RESUME_ERRORS = ["no_pending_interrupt", "interrupt_not_pending"] as const satisfies readonly ErrorKind[];

/** A resumable run's events that cannot be read: unknown, expired, or another user's. */
const RUN_EVENTS_ERRORS = [...ADDRESS_ERRORS, "run_events_not_found", "run_events_unavailable"] as const satisfies readonly ErrorKind[];

const SSE_FRAMES = "`data: <StreamEvent JSON>` frames; `data: [DONE]` after a clean end. Error events can follow a 200.";
const JSONL_LINES = "One StreamEvent JSON object per line; no completion marker.";
const PAUSED_AGAIN = " A run that pauses again ends with a `message` event carrying the interrupts.";

const serviceOperations = {
  liveness: {
    method: "get",
    path: "/health/live",
    agentScoped: false,
    public: true,
    summary: "Liveness (no authentication)",
    errors: [],
    responses: {
      200: { description: "Live", schema: livenessSchema },
      503: { description: "A run has stalled the worker", schema: livenessSchema },
    },
  },
  readiness: {
    method: "get",
    path: "/health/ready",
    agentScoped: false,
    public: true,
    summary: "Readiness (no authentication)",
    errors: [],
    responses: {
      200: { description: "Ready", schema: readinessSchema },
      503: { description: "Not ready: shutting down, or a dependency check failed", schema: readinessSchema },
    },
  },
  info: {
    method: "get",
    path: "/info",
    agentScoped: false,
    summary: "Registered agents and the default agent",
    errors: [],
    responses: { 200: { description: "Agents", schema: infoResponseSchema } },
  },
  resume: {
    method: "post",
    runId: true,
    path: "/resume",
    agentScoped: true,
    summary: "Resume a paused run (an approval, an answer) and return its final message",
    body: { schema: resumeRequestSchema, required: true },
    errors: [...RUN_ERRORS, ...RESUME_ERRORS],
    responses: { 200: { description: "The final ChatMessage, or another interrupt message if the run paused again", schema: chatMessageSchema } },
  },
  resumeStream: {
    method: "post",
    runId: true,
    path: "/resume/stream",
    agentScoped: true,
    summary: "Resume a paused run, streaming Server-Sent Events",
    body: { schema: resumeStreamRequestSchema, required: true },
    errors: [...RUN_START_ERRORS, ...RESUME_ERRORS],
    stream: "sse",
    streamDescription: SSE_FRAMES + PAUSED_AGAIN,
  },
  resumeStreamJsonl: {
    method: "post",
    runId: true,
    path: "/resume/stream/jsonl",
    agentScoped: true,
    summary: "Resume a paused run, streaming JSON Lines",
    body: { schema: resumeStreamRequestSchema, required: true },
    errors: [...RUN_START_ERRORS, ...RESUME_ERRORS],
    stream: "jsonl",
    streamDescription: JSONL_LINES + PAUSED_AGAIN,
  },
  invoke: {
    method: "post",
    runId: true,
    path: "/invoke",
    agentScoped: true,
    summary: "Run the agent and return its final message",
    body: { schema: invokeRequestSchema, required: true },
    idempotent: true,
    errors: RUN_ERRORS,
    responses: { 200: { description: "The final ChatMessage", schema: chatMessageSchema } },
  },
  stream: {
    method: "post",
    runId: true,
    path: "/stream",
    agentScoped: true,
    summary: "Run the agent, streaming Server-Sent Events",
    body: { schema: streamRequestSchema, required: true },
    errors: RUN_START_ERRORS,
    stream: "sse",
    streamDescription: SSE_FRAMES,
  },
  streamJsonl: {
    method: "post",
    runId: true,
    path: "/stream/jsonl",
    agentScoped: true,
    summary: "Run the agent, streaming JSON Lines",
    body: { schema: streamRequestSchema, required: true },
    errors: RUN_START_ERRORS,
    stream: "jsonl",
    streamDescription: JSONL_LINES,
  },
  cancel: {
    method: "post",
    path: "/cancel",
    agentScoped: true,
    control: true,
    summary: "Stop the run that holds a conversation, on whichever worker or host it runs",
    body: { schema: cancelRequestSchema, required: true },
    errors: [...ADDRESS_ERRORS, "lock_unavailable"],
    responses: {
      200: {
        description:
          "cancelled: true with the run's id when a run held the conversation (its invoke answers 409 run_cancelled, its stream ends with an " +
          "error event of that code); cancelled: false when nothing was running",
        schema: cancelResponseSchema,
      },
    },
  },
  runStream: {
    method: "get",
    path: "/runs/:run_id/stream",
    agentScoped: true,
    summary: "Replay a resumable run's events after a dropped stream, then follow it live (Server-Sent Events)",
    query: runStreamQuerySchema,
    errors: RUN_EVENTS_ERRORS,
    stream: "sse",
    replay: true,
    streamDescription:
      "`id: <seq>` and `data: <StreamEvent JSON>` frames after the `Last-Event-ID` header (or `after`), then live to the end; " +
      "`data: [DONE]` after a clean end.",
  },
  runStreamJsonl: {
    method: "get",
    path: "/runs/:run_id/stream/jsonl",
    agentScoped: true,
    summary: "Replay a resumable run's events after a dropped stream, then follow it live (JSON Lines)",
    query: runStreamQuerySchema,
    errors: RUN_EVENTS_ERRORS,
    stream: "jsonl",
    replay: true,
    streamDescription: "One StreamEvent JSON object per line with its `seq`, after `after`, then live to the end; no completion marker.",
  },
  readHistory: {
    method: "get",
    path: "/history",
    agentScoped: true,
    summary: "One page of a conversation's messages (reads take no conversation lock)",
    query: historyQuerySchema,
    errors: [...ADDRESS_ERRORS, ...STORAGE_ERRORS],
    responses: {
      200: { description: "Messages in order, run_id null, no feedback proofs; follow next_offset until null", schema: historyPageSchema },
    },
  },
  listThreads: {
    method: "get",
    path: "/threads",
    agentScoped: true,
    summary: "The caller's conversations with the agent, most recently updated first",
    query: threadsQuerySchema,
    errors: [...ADDRESS_ERRORS, ...STORAGE_ERRORS],
    responses: {
      200: { description: "One page of conversations; follow next_offset until null. A cleared conversation is not listed.", schema: threadListSchema },
    },
  },
  addMessages: {
    method: "post",
    path: "/history/add_messages",
    agentScoped: true,
    summary: "Append messages to a conversation without running the agent",
    body: { schema: addMessagesRequestSchema, required: true },
    idempotent: true,
    errors: [...ADDRESS_ERRORS, ...LOCK_ERRORS, ...STORAGE_ERRORS, "conversation_too_long"],
    responses: { 201: { description: "Appended as a new checkpoint", schema: addMessagesResponseSchema } },
  },
  clearHistory: {
    method: "delete",
    path: "/history/clear",
    agentScoped: true,
    summary: "Delete every checkpoint, blob and pending write of a conversation (body or query parameters)",
    body: { schema: clearHistoryRequestSchema, required: false, orQuery: true },
    errors: [...ADDRESS_ERRORS, ...LOCK_ERRORS, "database_unavailable"],
    responses: { 200: { description: "Cleared", schema: clearHistoryResponseSchema } },
  },
  feedback: {
    method: "post",
    path: "/feedback",
    agentScoped: true,
    summary: "Record feedback on a run; it goes to the observability backend",
    body: { schema: feedbackRequestSchema, required: true },
    idempotent: true,
    errors: [...ADDRESS_ERRORS, "feedback_proof_required", "feedback_proof_invalid", "feedback_signing_unavailable", "feedback_unavailable"],
    responses: { 201: { description: "Delivered, queued, or skipped (no backend)", schema: feedbackResponseSchema } },
  },
} as const satisfies Record<string, Operation>;

/** The one route table: the LangGraph Platform API's operations first (see platform-operations.ts), then agenthost's own. */
export const operations = { ...platformOperations, ...serviceOperations };

export type Operations = typeof operations;

/** The failures an operation reports because of its shape: authenticated, agent-scoped, with a body or query. */
export function inheritedErrors(operation: Operation): ErrorKind[] {
  return [
    ...(operation.public ? [] : (["unauthenticated", "service_busy", "shutting_down", "request_timeout"] as const)),
    // Every request but a control one counts against its token's user's requests per minute (FAIR_SHARE_REQUESTS_PER_MINUTE).
    ...(operation.public || operation.control ? [] : (["user_rate_limit"] as const)),
    ...(operation.agentScoped ? (["unknown_agent"] as const) : []),
    ...(operation.body || operation.query ? (["validation_failed"] as const) : []),
    ...(operation.body ? (["payload_too_large"] as const) : []),
    ...(operation.idempotent ? (["idempotency_in_progress", "idempotency_key_reused"] as const) : []),
  ];
}
