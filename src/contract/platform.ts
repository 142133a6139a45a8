import { z } from "zod";
import { namedSchemas } from "./named-schemas.ts";

/**
 * The LangGraph Platform API's requests and answers, as LangGraph's SDKs send and read them
 * (docs/langgraph-clients.md). Graph state travels as JSON: messages as dicts (`type` or `role`),
 * everything else as the graph defines it. Fields the SDKs send that agenthost does not act on are
 * accepted and ignored unless an entry says otherwise; fields of the wrong type are refused.
 */

const jsonObject = z.record(z.string(), z.unknown());
const optionalObject = jsonObject.nullish();

/** Stream modes as the SDK names them. */
export const STREAM_MODES = ["values", "updates", "messages-tuple", "messages", "custom", "events", "debug", "tasks", "checkpoints", "tools", "lifecycle"] as const;
export type StreamMode = (typeof STREAM_MODES)[number];

const streamModeSchema = z.enum(STREAM_MODES);

export const MAX_PAGE = 1000;
const page = (fallback: number) => ({
  limit: z.number().int().min(1).max(MAX_PAGE).default(fallback),
  offset: z.number().int().min(0).default(0),
});

const sortOrder = z.enum(["asc", "desc"]).optional();

export const assistantSearchSchema = z
  .object({
    graph_id: z.string().optional(),
    name: z.string().optional(),
    metadata: optionalObject,
    ...page(10),
    sort_by: z.enum(["assistant_id", "graph_id", "name", "created_at", "updated_at"]).optional(),
    sort_order: sortOrder,
  })
  .register(namedSchemas, { id: "PlatformAssistantSearch" });
export type AssistantSearchRequest = z.output<typeof assistantSearchSchema>;

export const assistantCountSchema = z
  .object({ graph_id: z.string().optional(), name: z.string().optional(), metadata: optionalObject })
  .register(namedSchemas, { id: "PlatformAssistantCount" });

export const assistantSchema = z
  .object({
    assistant_id: z.string(),
    graph_id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    config: jsonObject,
    context: jsonObject,
    metadata: jsonObject,
    version: z.number().int(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .register(namedSchemas, { id: "PlatformAssistant" });

export const THREAD_STATUSES = ["idle", "busy", "interrupted", "error"] as const;

/** A thread id the caller chooses: what agenthost's own API accepts as a thread_id. */
const threadIdSchema = z.string().min(1).max(256);

/**
 * A thread's time to live as LangGraph's SDK sends it: minutes, or `{ttl: minutes, strategy:
 * "delete"}`; the thread is deleted that long after its last update. Parsed to milliseconds.
 */
export const threadTtlSchema = z
  .union([
    z.number().positive().max(1e9),
    z.object({ ttl: z.number().positive().max(1e9), strategy: z.literal("delete", { error: 'the only ttl strategy is "delete"' }).optional() }),
  ])
  .nullish()
  .transform((ttl) => (ttl === null || ttl === undefined ? undefined : Math.round((typeof ttl === "number" ? ttl : ttl.ttl) * 60_000)))
  .optional();

export const threadCreateSchema = z
  .object({
    thread_id: threadIdSchema.nullish(),
    metadata: optionalObject,
    if_exists: z.enum(["raise", "do_nothing"]).nullish(),
    graph_id: z.string().nullish(),
    supersteps: z.array(z.unknown()).nullish(),
    ttl: threadTtlSchema,
  })
  .register(namedSchemas, { id: "PlatformThreadCreate" });
export type ThreadCreateRequest = z.output<typeof threadCreateSchema>;

export const threadPatchSchema = z.object({ metadata: optionalObject, ttl: threadTtlSchema }).register(namedSchemas, { id: "PlatformThreadPatch" });

export const threadSearchSchema = z
  .object({
    metadata: optionalObject,
    values: optionalObject,
    status: z.enum(THREAD_STATUSES).nullish(),
    ids: z.array(threadIdSchema).max(MAX_PAGE).nullish(),
    ...page(10),
    sort_by: z.enum(["thread_id", "created_at", "updated_at", "status"]).nullish(),
    sort_order: sortOrder.nullable(),
    select: z.array(z.string()).nullish(),
  })
  .register(namedSchemas, { id: "PlatformThreadSearch" });
export type ThreadSearchRequest = z.output<typeof threadSearchSchema>;

export const threadCountSchema = z
  .object({ metadata: optionalObject, values: optionalObject, status: z.enum(THREAD_STATUSES).nullish() })
  .register(namedSchemas, { id: "PlatformThreadCount" });

export const threadSchema = z
  .object({
    thread_id: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
    metadata: jsonObject,
    status: z.enum(THREAD_STATUSES),
    config: jsonObject,
    values: z.unknown(),
    interrupts: z.record(z.string(), z.array(z.unknown())),
  })
  .register(namedSchemas, { id: "PlatformThread" });

const checkpointSchema = z.object({
  thread_id: z.string().optional(),
  checkpoint_ns: z.string().optional(),
  checkpoint_id: z.string().nullish(),
  checkpoint_map: z.unknown().optional(),
});

export const threadStateSchema = z
  .object({
    values: z.unknown(),
    next: z.array(z.string()),
    checkpoint: checkpointSchema.nullable(),
    metadata: z.unknown(),
    created_at: z.string().nullable(),
    parent_checkpoint: checkpointSchema.nullable(),
    tasks: z.array(z.unknown()),
    interrupts: z.array(z.unknown()),
  })
  .register(namedSchemas, { id: "PlatformThreadState" });

export const stateQuerySchema = z.object({ subgraphs: z.enum(["true", "false"]).optional() });

export const stateAtCheckpointSchema = z
  .object({ checkpoint: checkpointSchema, subgraphs: z.boolean().nullish() })
  .register(namedSchemas, { id: "PlatformStateAtCheckpoint" });

export const stateUpdateSchema = z
  .object({
    values: z.unknown(),
    as_node: z.string().nullish(),
    checkpoint: checkpointSchema.nullish(),
    checkpoint_id: z.string().nullish(),
  })
  .register(namedSchemas, { id: "PlatformStateUpdate" });

export const stateUpdateResponseSchema = z.object({ checkpoint: checkpointSchema }).register(namedSchemas, { id: "PlatformStateUpdated" });

export const historyQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(MAX_PAGE).default(10),
  before: z.string().optional(),
});

export const historyBodySchema = z
  .object({
    limit: z.number().int().min(1).max(MAX_PAGE).default(10),
    before: z.union([z.string(), checkpointSchema]).nullish(),
    metadata: optionalObject,
    checkpoint: checkpointSchema.nullish(),
  })
  .register(namedSchemas, { id: "PlatformHistoryRequest" });

export const runCreateSchema = z
  .object({
    assistant_id: z.string().min(1),
    input: z.union([jsonObject, z.array(z.unknown())]).nullish(),
    command: z
      .object({
        resume: z.unknown().optional(),
        update: z.unknown().optional(),
        goto: z.unknown().optional(),
      })
      .nullish(),
    checkpoint: checkpointSchema.nullish(),
    checkpoint_id: z.string().nullish(),
    config: z
      .object({
        configurable: optionalObject,
        recursion_limit: z.number().int().min(1).max(10_000).nullish(),
        tags: z.array(z.string()).nullish(),
      })
      .loose()
      .nullish(),
    context: optionalObject,
    metadata: optionalObject,
    stream_mode: z.union([streamModeSchema, z.array(streamModeSchema)]).nullish(),
    stream_subgraphs: z.boolean().nullish(),
    stream_resumable: z.boolean().nullish(),
    on_disconnect: z.enum(["cancel", "continue"]).nullish(),
    multitask_strategy: z.enum(["reject", "interrupt", "rollback", "enqueue"]).nullish(),
    if_not_exists: z.enum(["create", "reject"]).nullish(),
    on_completion: z.enum(["delete", "keep"]).nullish(),
    after_seconds: z.number().min(0).max(31_536_000).nullish(),
    interrupt_before: z.union([z.literal("*"), z.array(z.string())]).nullish(),
    interrupt_after: z.union([z.literal("*"), z.array(z.string())]).nullish(),
    webhook: z.string().nullish(),
    feedback_keys: z.array(z.string()).nullish(),
    durability: z.enum(["sync", "async", "exit"]).nullish(),
    checkpoint_during: z.boolean().nullish(),
  })
  .register(namedSchemas, { id: "PlatformRunCreate" });
export type RunCreateRequest = z.output<typeof runCreateSchema>;

export const RUN_STATUSES = ["pending", "running", "success", "error", "timeout", "interrupted"] as const;

export const runSchema = z
  .object({
    run_id: z.string(),
    thread_id: z.string(),
    assistant_id: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
    status: z.enum(RUN_STATUSES),
    metadata: jsonObject,
    kwargs: jsonObject,
    multitask_strategy: z.string(),
  })
  .register(namedSchemas, { id: "PlatformRun" });

export const runListQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(MAX_PAGE).default(10),
  offset: z.coerce.number().int().min(0).default(0),
  status: z.enum(RUN_STATUSES).optional(),
});

export const cancelQuerySchema = z.object({
  wait: z.enum(["0", "1", "true", "false"]).optional(),
  action: z.enum(["interrupt", "rollback"]).optional(),
});

export const joinStreamQuerySchema = z.object({
  cancel_on_disconnect: z.enum(["0", "1", "true", "false"]).optional(),
  stream_mode: z.union([z.string(), z.array(z.string())]).optional(),
});

/** The final values of a run that waited (`/runs/wait`, `/join`). */
export const runValuesSchema = z
  .record(z.string(), z.unknown())
  .describe("The thread's values when the run ended (with `__interrupt__` when it paused; `__error__` `{error, message}` when it failed once started)")
  .register(namedSchemas, { id: "PlatformRunValues" });

export const assistantListSchema = z.array(assistantSchema).register(namedSchemas, { id: "PlatformAssistantList" });
export const threadListSchema = z.array(threadSchema).register(namedSchemas, { id: "PlatformThreadList" });
export const threadStateListSchema = z.array(threadStateSchema).register(namedSchemas, { id: "PlatformThreadStateList" });
export const runListSchema = z.array(runSchema).register(namedSchemas, { id: "PlatformRunList" });
export const countSchema = z.number().int().min(0).describe("How many match").register(namedSchemas, { id: "PlatformCount" });
export const jsonDocumentSchema = z.record(z.string(), z.unknown()).register(namedSchemas, { id: "PlatformJsonObject" });
export const okSchema = z.object({ ok: z.literal(true) }).register(namedSchemas, { id: "PlatformOk" });
export const noContentSchema = z.null().register(namedSchemas, { id: "PlatformNoContent" });
