import { z } from "zod";
import { apiSchemas } from "./schemas.ts";

type Operation = {
  summary: string;
  tags: string[];
  parameters?: unknown[];
  requestBody?: unknown;
  responses: Record<string, unknown>;
  security?: unknown[];
};

const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });
const json = (id: string) => ({ "application/json": { schema: ref(id) } });
const errorResponse = (description: string) => ({ description, content: json("Error") });

const agentParam = {
  name: "agent_id",
  in: "path",
  required: true,
  schema: { type: "string" },
  description: "A registered agent; every agent route also exists without this segment for the default agent.",
};

const standardErrors = {
  "401": errorResponse("Missing or invalid bearer token"),
  "403": errorResponse("The token may not act for the requested user_id"),
  "404": errorResponse("Unknown agent"),
  "413": errorResponse("Body or attachments exceed a configured limit (payload_too_large), or the conversation is full (conversation_too_long)"),
  "422": errorResponse("Validation failed (validation_failed), or the recursion_limit the request set was reached (recursion_limit_exceeded)"),
  "503": errorResponse(
    "Worker full (service_busy, Retry-After: 1), database unavailable, model provider unavailable (model_unavailable), or provider rejected the service's credentials (model_authentication_failed)",
  ),
};

/** Operations keyed by path (with the agent prefix); each is also served at the unprefixed alias. */
const agentOperations: Record<string, Record<string, Operation>> = {
  "/{agent_id}/invoke": {
    post: {
      summary: "Run the agent and return its final message",
      tags: ["runs"],
      requestBody: { required: true, content: json("InvokeRequest") },
      responses: {
        "200": { description: "The final ChatMessage", content: json("ChatMessage") },
        "409": errorResponse("Conversation busy, or its queue wait expired (conversation_busy); or stored data cannot be read back (conversation_unreadable)"),
        "429": errorResponse("Model provider rate limit (model_rate_limited; Retry-After when the provider sent one)"),
        "502": errorResponse("The model provider rejected the request (model_request_rejected)"),
        "504": errorResponse("Request deadline (request_timeout) or model timeout (model_timeout) expired"),
        ...standardErrors,
      },
    },
  },
  "/{agent_id}/stream": {
    post: {
      summary: "Run the agent, streaming Server-Sent Events",
      tags: ["runs"],
      requestBody: { required: true, content: json("StreamRequest") },
      responses: {
        "200": {
          description: "`data: <StreamEvent JSON>` frames; `data: [DONE]` after a clean end. Error events can follow a 200.",
          content: { "text/event-stream": { schema: ref("StreamEvent") } },
        },
        "409": errorResponse("Conversation busy, or its queue wait expired (conversation_busy); or stored data cannot be read back (conversation_unreadable)"),
        ...standardErrors,
      },
    },
  },
  "/{agent_id}/stream/jsonl": {
    post: {
      summary: "Run the agent, streaming JSON Lines",
      tags: ["runs"],
      requestBody: { required: true, content: json("StreamRequest") },
      responses: {
        "200": {
          description: "One StreamEvent JSON object per line; no completion marker.",
          content: { "application/jsonl": { schema: ref("StreamEvent") } },
        },
        "409": errorResponse("Conversation busy, or its queue wait expired (conversation_busy); or stored data cannot be read back (conversation_unreadable)"),
        ...standardErrors,
      },
    },
  },
  "/{agent_id}/history": {
    get: {
      summary: "One page of a conversation's messages (reads take no conversation lock)",
      tags: ["history"],
      parameters: [
        { name: "thread_id", in: "query", required: true, schema: { type: "string" }, description: "The conversation; a user_id alone selects nothing." },
        { name: "user_id", in: "query", required: false, schema: { type: "string" }, description: "Trusted callers: any user. Token users: omit or their own id." },
        { name: "limit", in: "query", required: false, schema: { type: "integer", minimum: 1, maximum: 1000, default: 100 }, description: "Page size; HISTORY_MAX_PAGE_SIZE may lower the maximum." },
        { name: "offset", in: "query", required: false, schema: { type: "integer", minimum: 0, default: 0 } },
      ],
      responses: {
        "200": { description: "Messages in order, run_id null, no feedback proofs; follow next_offset until null", content: json("HistoryPage") },
        ...standardErrors,
      },
    },
  },
  "/{agent_id}/history/add_messages": {
    post: {
      summary: "Append messages to a conversation without running the agent",
      tags: ["history"],
      requestBody: { required: true, content: json("AddMessagesRequest") },
      responses: {
        "201": { description: "Appended as a new checkpoint", content: json("AddMessagesResponse") },
        "409": errorResponse("Conversation busy, or its queue wait expired (conversation_busy); or stored data cannot be read back (conversation_unreadable)"),
        ...standardErrors,
      },
    },
  },
  "/{agent_id}/history/clear": {
    delete: {
      summary: "Delete every checkpoint, blob and pending write of a conversation (body or query parameters)",
      tags: ["history"],
      parameters: [
        { name: "thread_id", in: "query", required: false, schema: { type: "string" }, description: "Instead of the body's thread_id." },
        { name: "user_id", in: "query", required: false, schema: { type: "string" }, description: "Instead of the body's user_id." },
      ],
      requestBody: { required: false, content: json("ClearHistoryRequest") },
      responses: {
        "200": { description: "Cleared", content: json("ClearHistoryResponse") },
        "409": errorResponse("Conversation busy, or its queue wait expired"),
        ...standardErrors,
      },
    },
  },
  "/{agent_id}/feedback": {
    post: {
      summary: "Record feedback on a run; it goes to the observability backend",
      tags: ["feedback"],
      requestBody: { required: true, content: json("FeedbackRequest") },
      responses: {
        "201": { description: "Delivered, queued, or skipped (no backend)", content: json("FeedbackResponse") },
        ...standardErrors,
        "403": errorResponse("The token may not act for user_id, or the feedback proof is missing, altered or made for another user, agent or run"),
        "503": errorResponse("Worker full, FEEDBACK_SIGNING_SECRET unset for a non-trusted token, or the backend/queue did not accept the feedback"),
      },
    },
  },
};

const resumeErrors = {
  "409": errorResponse(
    "Conversation busy; no pending interrupt (no_pending_interrupt); interrupt_id not pending (interrupt_not_pending); or stored data cannot be read back (conversation_unreadable)",
  ),
  "429": errorResponse("Model provider rate limit (model_rate_limited; Retry-After when the provider sent one)"),
  "504": errorResponse("Request deadline or model timeout expired"),
};

agentOperations["/{agent_id}/resume"] = {
  post: {
    summary: "Resume a paused run (an approval, an answer) and return its final message",
    tags: ["runs"],
    requestBody: { required: true, content: json("ResumeRequest") },
    responses: {
      "200": { description: "The final ChatMessage, or another `interrupt` message if the run paused again", content: json("ChatMessage") },
      ...resumeErrors,
      ...standardErrors,
    },
  },
};
agentOperations["/{agent_id}/resume/stream"] = {
  post: {
    summary: "Resume a paused run, streaming Server-Sent Events",
    tags: ["runs"],
    requestBody: { required: true, content: json("ResumeStreamRequest") },
    responses: {
      "200": {
        description: "Same frames as /stream; a run that pauses again ends with a `message` event of type `interrupt`.",
        content: { "text/event-stream": { schema: ref("StreamEvent") } },
      },
      ...resumeErrors,
      ...standardErrors,
    },
  },
};
agentOperations["/{agent_id}/resume/stream/jsonl"] = {
  post: {
    summary: "Resume a paused run, streaming JSON Lines",
    tags: ["runs"],
    requestBody: { required: true, content: json("ResumeStreamRequest") },
    responses: {
      "200": {
        description: "Same lines as /stream/jsonl; a run that pauses again ends with a `message` event of type `interrupt`.",
        content: { "application/jsonl": { schema: ref("StreamEvent") } },
      },
      ...resumeErrors,
      ...standardErrors,
    },
  },
};

function withoutAgent(operation: Operation): Operation {
  return { ...operation, parameters: (operation.parameters ?? []).filter((p) => p !== agentParam) };
}

/** The OpenAPI 3 document, generated from the zod schemas that validate requests. */
export function buildOpenApiDocument(extraPaths: Record<string, Record<string, Operation>> = {}): Record<string, unknown> {
  const generated = z.toJSONSchema(apiSchemas, {
    target: "openapi-3.0",
    uri: (id) => `#/components/schemas/${id}`,
    io: "input",
    unrepresentable: "any",
  }) as { schemas: Record<string, Record<string, unknown>> };
  // zod names each registered schema with `$id`, which an OpenAPI 3.0 Schema Object does not allow:
  // the component's key already names it.
  const schemas = Object.fromEntries(
    Object.entries(generated.schemas).map(([name, schema]) => {
      const { $id: _id, ...rest } = schema;
      return [name, rest];
    }),
  );
  const paths: Record<string, Record<string, Operation>> = {
    "/info": {
      get: {
        summary: "Registered agents and the default agent",
        tags: ["service"],
        responses: { "200": { description: "Agents", content: json("Info") }, "401": errorResponse("Unauthenticated") },
      },
    },
    "/health/ready": {
      get: { summary: "Readiness (no authentication)", tags: ["service"], security: [], responses: { "200": { description: "Ready" }, "503": { description: "Not ready" } } },
    },
    "/health/live": {
      get: { summary: "Liveness (no authentication)", tags: ["service"], security: [], responses: { "200": { description: "Live" }, "503": { description: "Stalled" } } },
    },
  };
  for (const [path, methods] of Object.entries({ ...agentOperations, ...extraPaths })) {
    paths[path] = Object.fromEntries(
      Object.entries(methods).map(([m, op]) => [m, { ...op, parameters: [agentParam, ...(op.parameters ?? [])] }]),
    );
    paths[path.replace("/{agent_id}", "")] = Object.fromEntries(
      Object.entries(methods).map(([m, op]) => [m, { ...withoutAgent(op), summary: `${op.summary} (default agent)` }]),
    );
  }
  return {
    openapi: "3.0.3",
    info: {
      title: "agenthost",
      version: "0.10.0",
      description: "Hosts LangGraph.js agents over HTTP: runs, streams, history and feedback per conversation.",
    },
    components: {
      schemas,
      securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
    },
    security: [{ bearer: [] }],
    paths,
  };
}
