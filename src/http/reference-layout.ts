import type { z } from "zod";
import type { Operation } from "./operation.ts";
import type { Operations } from "./operations.ts";

/**
 * How the API reference (/docs, from /openapi.json) lists the route table: its groups (OpenAPI
 * tags) in order, every operation in the order it is shown, and the request each one's "Try it
 * out" starts from. The examples work as they are against a fresh service with the fake model
 * (USE_FAKE_MODEL=true) and the built-in agents, whichever token is used; an operation about a
 * run that must exist first (feedback, resume, a run's record) is refused with its own error, never
 * as invalid. The route table's own order decides how paths match (operations.ts); this one only
 * how they are shown.
 */

/** The reference's groups, in the order shown. */
export const REFERENCE_GROUPS = [
  { name: "runs", description: "Run an agent on a conversation: its final message, or its events as they come" },
  { name: "history", description: "Read, list, append to and clear conversations" },
  { name: "feedback", description: "Feedback on a run" },
  { name: "run control", description: "Resume a paused run, stop a running one, rejoin a dropped stream" },
  { name: "service", description: "Agents and probes" },
  {
    name: "LangGraph Platform: assistants",
    description: "The LangGraph Platform API as LangGraph's SDKs call it (docs/langgraph-clients.md): the server's probe, and one assistant per agent",
  },
  { name: "LangGraph Platform: threads", description: "Threads, their state and their checkpoints" },
  { name: "LangGraph Platform: runs", description: "Runs on a thread or on a thread of their own: waited, streamed, or in the background" },
] as const;

export type ReferenceGroup = (typeof REFERENCE_GROUPS)[number]["name"];

/** The agent the examples name where a path or body needs one: a built-in agent every service serves. */
export const EXAMPLE_AGENT = "chatbot-agent";

/** Path parameter names of a table path: `/threads/:thread_id/runs/:run_id` gives "thread_id" | "run_id". */
type PathParameters<P extends string> = P extends `${string}:${infer Name}/${infer Rest}`
  ? Name | PathParameters<`/${Rest}`>
  : P extends `${string}:${infer Name}`
    ? Name
    : never;

/**
 * An operation's place in the reference and its example request: a body of the operation's own
 * request type when it takes one, every path parameter, and any query parameters worth filling in.
 * (The agent segment's example is EXAMPLE_AGENT.)
 */
export type ReferenceEntry<O extends Operation> = { readonly group: ReferenceGroup } & (O extends { body: { schema: infer S extends z.ZodType } }
  ? { readonly body: z.input<S> }
  : { readonly body?: never }) &
  ([PathParameters<O["path"]>] extends [never] ? { readonly params?: never } : { readonly params: { readonly [N in PathParameters<O["path"]>]: string } }) &
  (O extends { query: infer Q extends z.ZodObject } ? { readonly query?: { readonly [K in keyof z.input<Q>]?: string } } : { readonly query?: never });

/** The conversation the examples of agenthost's own API use. */
const CONVERSATION = "demo";
/** The LangGraph Platform thread the examples create (if absent), run on, read and finally delete. */
const PLATFORM_THREAD = "demo-thread";
/** Stands for a run's id (an answer's X-Run-Id): no run has it, so the run's routes answer 404 until it is replaced. */
const RUN_ID = "00000000-0000-0000-0000-000000000000";

const HELLO = { input: { message: "Hello" }, thread_id: CONVERSATION };
const APPROVE = { thread_id: CONVERSATION, resume: { decisions: [{ type: "approve" }] } };
const PLATFORM_RUN = { assistant_id: EXAMPLE_AGENT, input: { messages: [{ role: "user", content: "Hello" }] } };
const ON_THREAD = { thread_id: PLATFORM_THREAD };
const ON_RUN = { thread_id: PLATFORM_THREAD, run_id: RUN_ID };
const ON_ASSISTANT = { assistant_id: EXAMPLE_AGENT };

/**
 * Every operation of the route table (tsc refuses a table without its entry here), in the order
 * the reference shows them within their groups.
 */
export const REFERENCE = {
  invoke: { group: "runs", body: HELLO },
  stream: { group: "runs", body: HELLO },
  streamJsonl: { group: "runs", body: HELLO },

  readHistory: { group: "history", query: { thread_id: CONVERSATION } },
  listThreads: { group: "history" },
  addMessages: { group: "history", body: { thread_id: CONVERSATION, messages: [{ type: "human", content: "My favourite colour is green." }] } },
  clearHistory: { group: "history", body: { thread_id: CONVERSATION } },

  feedback: { group: "feedback", body: { run_id: RUN_ID, key: "helpful", score: 1, comment: "Clear and short." } },

  resume: { group: "run control", body: APPROVE },
  resumeStream: { group: "run control", body: APPROVE },
  resumeStreamJsonl: { group: "run control", body: APPROVE },
  cancel: { group: "run control", body: { thread_id: CONVERSATION } },
  runStream: { group: "run control", params: { run_id: RUN_ID }, query: { thread_id: CONVERSATION } },
  runStreamJsonl: { group: "run control", params: { run_id: RUN_ID }, query: { thread_id: CONVERSATION } },

  info: { group: "service" },
  readiness: { group: "service" },
  liveness: { group: "service" },

  ok: { group: "LangGraph Platform: assistants" },
  searchAssistants: { group: "LangGraph Platform: assistants", body: { limit: 10, offset: 0 } },
  countAssistants: { group: "LangGraph Platform: assistants", body: {} },
  getAssistant: { group: "LangGraph Platform: assistants", params: ON_ASSISTANT },
  assistantSchemas: { group: "LangGraph Platform: assistants", params: ON_ASSISTANT },
  assistantGraph: { group: "LangGraph Platform: assistants", params: ON_ASSISTANT },
  assistantSubgraphs: { group: "LangGraph Platform: assistants", params: ON_ASSISTANT },

  createThread: {
    group: "LangGraph Platform: threads",
    body: { thread_id: PLATFORM_THREAD, graph_id: EXAMPLE_AGENT, if_exists: "do_nothing", metadata: { purpose: "demo" } },
  },
  searchThreads: { group: "LangGraph Platform: threads", body: { limit: 10, offset: 0 } },
  countThreads: { group: "LangGraph Platform: threads", body: {} },
  getThread: { group: "LangGraph Platform: threads", params: ON_THREAD },
  patchThread: { group: "LangGraph Platform: threads", params: ON_THREAD, body: { metadata: { topic: "greetings" } } },
  threadState: { group: "LangGraph Platform: threads", params: ON_THREAD },
  updateThreadState: {
    group: "LangGraph Platform: threads",
    params: ON_THREAD,
    body: { values: { messages: [{ type: "human", content: "My favourite colour is green." }] } },
  },
  threadStateAt: { group: "LangGraph Platform: threads", params: { thread_id: PLATFORM_THREAD, checkpoint_id: RUN_ID } },
  threadStateAtCheckpoint: { group: "LangGraph Platform: threads", params: ON_THREAD, body: { checkpoint: { checkpoint_ns: "" } } },
  threadHistory: { group: "LangGraph Platform: threads", params: ON_THREAD, query: { limit: "10" } },
  searchThreadHistory: { group: "LangGraph Platform: threads", params: ON_THREAD, body: { limit: 10 } },
  deleteThread: { group: "LangGraph Platform: threads", params: ON_THREAD },

  threadRunWait: { group: "LangGraph Platform: runs", params: ON_THREAD, body: PLATFORM_RUN },
  threadRunStream: { group: "LangGraph Platform: runs", params: ON_THREAD, body: { ...PLATFORM_RUN, stream_mode: ["values"] } },
  statelessRunWait: { group: "LangGraph Platform: runs", body: PLATFORM_RUN },
  statelessRunStream: { group: "LangGraph Platform: runs", body: { ...PLATFORM_RUN, stream_mode: ["values"] } },
  createThreadRun: { group: "LangGraph Platform: runs", params: ON_THREAD, body: PLATFORM_RUN },
  listRuns: { group: "LangGraph Platform: runs", params: ON_THREAD, query: { limit: "10" } },
  createRun: { group: "LangGraph Platform: runs", body: PLATFORM_RUN },
  getRun: { group: "LangGraph Platform: runs", params: ON_RUN },
  joinRun: { group: "LangGraph Platform: runs", params: ON_RUN },
  joinRunStream: { group: "LangGraph Platform: runs", params: ON_RUN },
  cancelRun: { group: "LangGraph Platform: runs", params: ON_RUN },
  deleteRun: { group: "LangGraph Platform: runs", params: ON_RUN },
} satisfies { readonly [K in keyof Operations]: ReferenceEntry<Operations[K]> };

/** The operations' ids, group by group, each group in the order above. */
export function referenceOrder(): Array<keyof Operations> {
  const ids = Object.keys(REFERENCE) as Array<keyof Operations>;
  return REFERENCE_GROUPS.flatMap(({ name }) => ids.filter((id) => REFERENCE[id].group === name));
}
