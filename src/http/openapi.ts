import { z } from "zod";
import { streamEventSchema } from "../contract/messages.ts";
import { namedSchemas } from "../contract/named-schemas.ts";
import { errorCatalogue, type ErrorKind } from "./api-error.ts";
import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENCY_KEY_PATTERN, REPLAYED_HEADER } from "./idempotency.ts";
import { REQUEST_ID } from "./middleware/request-context.ts";
import { documentedPath, isStream, pathParameters, type Operation } from "./operation.ts";
import { inheritedErrors, operations } from "./operations.ts";
import { EXAMPLE_AGENT, REFERENCE, REFERENCE_GROUPS, referenceOrder } from "./reference-layout.ts";
import { errorBodySchema } from "./service-schemas.ts";

/**
 * The OpenAPI 3.0 document, generated from the route table: each operation's path (and the default
 * agent's alias), parameters, body, answers and failures, with the contract's named schemas as
 * components. Nothing here is written by hand per route; each operation's group, place and example
 * request come from reference-layout.ts.
 */

type Json = Record<string, unknown>;

/** An operation's reference entry, as this generic code reads it (reference-layout.ts types each one against its operation). */
interface Entry {
  readonly group: string;
  readonly body?: unknown;
  readonly params?: Readonly<Record<string, string>>;
  readonly query?: Readonly<Record<string, string>>;
}

const JSON_SCHEMA_OPTIONS = { target: "openapi-3.0", io: "input", unrepresentable: "any" } as const;

const componentRef = (kind: "schemas" | "headers" | "parameters", name: string) => ({ $ref: `#/components/${kind}/${name}` });

/** The name a schema has in the contract; every schema the table uses must have one. */
function schemaRef(schema: z.ZodType): Json {
  const id = namedSchemas.get(schema)?.id;
  if (!id) throw new Error("a schema in the route table has no name in namedSchemas");
  return componentRef("schemas", id);
}

/** Headers the document describes once and refers to by name. */
const HEADERS: Record<string, Json> = {
  "X-Request-Id": {
    description: "The request's id: the caller's own X-Request-Id when it is 1 to 128 of [A-Za-z0-9_.:-], else a new UUID. Logged with every line of the request.",
    schema: { type: "string" },
  },
  "Retry-After": { description: "Seconds (or an HTTP date) after which a retry may succeed.", schema: { type: "string" } },
  "WWW-Authenticate": { description: "The authentication scheme the service expects: Bearer.", schema: { type: "string" } },
  Connection: { description: "close: the service closes the connection after this answer.", schema: { type: "string" } },
  "X-Run-Id": {
    description: "The id of the run this request started, sent before the first byte (name it to POST /cancel, or to resume a resumable stream).",
    schema: { type: "string" },
  },
  "Cache-Control": { description: "no-cache, no-transform: proxies must pass events through as they come.", schema: { type: "string" } },
  [REPLAYED_HEADER]: {
    description: "true: this is the stored answer of an earlier request with the same Idempotency-Key and body; nothing ran again.",
    schema: { type: "string" },
  },
};

/** The key that makes a retry safe (src/http/idempotency.ts). */
const IDEMPOTENCY_KEY_PARAMETER = {
  name: IDEMPOTENCY_KEY_HEADER,
  in: "header",
  required: false,
  schema: { type: "string", pattern: IDEMPOTENCY_KEY_PATTERN.source },
  description:
    "A key of the caller's choosing (a UUID) for this request. A retry with the same key and body replays the first successful " +
    "answer without running anything; while the first runs: 409 idempotency_in_progress; another body: 422 idempotency_key_reused. " +
    "Kept IDEMPOTENCY_TTL seconds (default 24 h); a failed request gives its key up.",
};

/** The caller's own request id, echoed in X-Request-Id and logged (request-context middleware). */
const REQUEST_ID_PARAMETER = {
  name: "X-Request-Id",
  in: "header",
  required: false,
  schema: { type: "string", pattern: REQUEST_ID.source },
  description: "An id of the caller's choosing for this request; any other value is replaced by a new UUID.",
};

function headerRefs(names: Iterable<string>): Json {
  return Object.fromEntries([...new Set(["X-Request-Id", ...names])].map((name) => [name, componentRef("headers", name)]));
}

/** One error answer per status: the codes it may carry, and the headers any of them sends. */
function errorResponses(kinds: readonly ErrorKind[]): Json {
  const byStatus = new Map<number, ErrorKind[]>();
  for (const kind of new Set(kinds)) {
    const { status } = errorCatalogue[kind];
    byStatus.set(status, [...(byStatus.get(status) ?? []), kind]);
  }
  const responses: Json = {};
  for (const [status, group] of [...byStatus].sort(([a], [b]) => a - b)) {
    const entries = group.map((kind) => errorCatalogue[kind] as { code: string; detail: string; headers?: Record<string, string>; sometimes?: readonly string[] });
    const headers = entries.flatMap((entry) => [...Object.keys(entry.headers ?? {}), ...(entry.sometimes ?? [])]);
    responses[String(status)] = {
      description: entries.map((entry) => `\`${entry.code}\`: ${entry.detail}`).join(" "),
      headers: headerRefs(headers),
      content: { "application/json": { schema: schemaRef(errorBodySchema) } },
    };
  }
  return responses;
}

/** A query parameter for each field of `shape`, with the value "Try it out" starts from when `examples` gives one. */
function queryParameters(
  shape: Record<string, z.ZodType>,
  describe: (name: string, field: z.ZodType) => string | undefined,
  required: boolean,
  examples: Readonly<Record<string, string>> = {},
): Json[] {
  return Object.entries(shape).map(([name, field]) => {
    const { description: _description, ...schema } = z.toJSONSchema(field, JSON_SCHEMA_OPTIONS) as Json;
    const parameter: Json = { name, in: "query", required: required && !field.isOptional(), schema };
    const description = describe(name, field);
    if (description) parameter.description = description;
    if (examples[name] !== undefined) parameter.example = examples[name];
    return parameter;
  });
}

function parametersOf(operation: Operation, entry: Entry): Json[] {
  if (operation.query) return queryParameters(operation.query.shape as Record<string, z.ZodType>, (_name, field) => field.description, true, entry.query);
  const body = operation.body;
  if (body?.orQuery && body.schema instanceof z.ZodObject) {
    // The example goes in the body; the same fields as query parameters start empty.
    return queryParameters(body.schema.shape as Record<string, z.ZodType>, (name) => `Instead of the body's ${name}.`, false);
  }
  return [];
}

function successResponses(operation: Operation): Json {
  const runHeader = operation.runId ? ["X-Run-Id"] : [];
  if (isStream(operation)) {
    const media = operation.stream === "jsonl" ? "application/jsonl" : "text/event-stream";
    // A Platform stream's events are named by their SSE `event:` line; their data is the mode's JSON.
    const schema = operation.stream === "platform" ? { type: "string" } : schemaRef(streamEventSchema);
    return {
      "200": {
        description: operation.streamDescription,
        headers: headerRefs(["Cache-Control", ...runHeader]),
        content: { [media]: { schema } },
      },
    };
  }
  return Object.fromEntries(
    Object.entries(operation.responses).map(([status, response]) => [
      status,
      {
        description: response.description,
        headers: headerRefs([...runHeader, ...(operation.idempotent ? [REPLAYED_HEADER] : [])]),
        // 202 and 204 carry no body.
        ...(status === "202" || status === "204" ? {} : { content: { "application/json": { schema: schemaRef(response.schema) } } }),
      },
    ]),
  );
}

const agentParameter = {
  name: "agent_id",
  in: "path",
  required: true,
  schema: { type: "string" },
  description: "A registered agent (GET /info lists them); the same operation without this segment serves the default agent.",
  example: EXAMPLE_AGENT,
};

/** What the path parameters of the table name. */
const PATH_PARAMETER_DESCRIPTIONS: Readonly<Record<string, string>> = {
  run_id: "A run's id: the X-Run-Id (or run_id) of the answer that started it.",
  thread_id: "A thread's id: one created with POST /threads, or named by a run.",
  assistant_id: "An assistant's id, or its graph id: the agent's name.",
  checkpoint_id: "A checkpoint of the thread (GET /threads/{thread_id}/history lists them).",
};

/** The operation's own path parameters (`:run_id`), with their examples, and the SSE replay's Last-Event-ID. */
function ownParameters(operation: Operation, entry: Entry): Json[] {
  const parameters: Json[] = pathParameters(operation).map((name) => ({
    name,
    in: "path",
    required: true,
    schema: { type: "string" },
    ...(PATH_PARAMETER_DESCRIPTIONS[name] ? { description: PATH_PARAMETER_DESCRIPTIONS[name] } : {}),
    ...(entry.params?.[name] !== undefined ? { example: entry.params[name] } : {}),
  }));
  if (isStream(operation) && operation.replay && operation.stream === "sse") {
    parameters.push({
      name: "Last-Event-ID",
      in: "header",
      required: false,
      schema: { type: "string", pattern: "^\\d{1,9}$" },
      description: "The id of the last event received; the replay starts after it (instead of `after`).",
    });
  }
  return parameters;
}


/** The operation as OpenAPI describes it, with or without the agent segment. */
function operationObject(id: string, operation: Operation, entry: Entry, withAgent: boolean): Json {
  const object: Json = {
    operationId: withAgent || !operation.agentScoped ? id : `${id}DefaultAgent`,
    summary: operation.agentScoped && !withAgent ? `${operation.summary} (default agent)` : operation.summary,
    tags: [entry.group],
    parameters: [
      ...(withAgent ? [agentParameter] : []),
      ...ownParameters(operation, entry),
      ...parametersOf(operation, entry),
      ...(operation.idempotent ? [componentRef("parameters", "IdempotencyKey")] : []),
      componentRef("parameters", "RequestId"),
    ],
    responses: {
      ...successResponses(operation),
      ...errorResponses([...inheritedErrors(operation), ...operation.errors]),
    },
  };
  if (operation.body) {
    object.requestBody = {
      required: operation.body.required,
      content: { "application/json": { schema: schemaRef(operation.body.schema), example: entry.body } },
    };
  }
  if (operation.public) object.security = [];
  return object;
}

/** Each operation's OpenAPI path: the default agent's `/x` and `/{agent_id}/x`, or just its own path. */
function documentedPaths(operation: Operation): Array<{ path: string; withAgent: boolean }> {
  const both = operation.agentScoped ? [false, true] : [false];
  return both.map((withAgent) => ({ path: documentedPath(operation, withAgent), withAgent }));
}

/** The named schemas as OpenAPI components (zod names each with `$id`, which OpenAPI 3.0 does not allow). */
function componentSchemas(): Record<string, Json> {
  const generated = z.toJSONSchema(namedSchemas, { ...JSON_SCHEMA_OPTIONS, uri: (id) => `#/components/schemas/${id}` }) as {
    schemas: Record<string, Json>;
  };
  return Object.fromEntries(
    Object.entries(generated.schemas).map(([name, schema]) => {
      const { $id: _id, ...rest } = schema;
      return [name, rest];
    }),
  );
}

/**
 * The OpenAPI 3 document of the route table. Its paths come in the reference's order (the
 * interactive reference lists each group's operations in the order of the paths, and a path's
 * methods in the order written).
 */
export function buildOpenApiDocument(): Json {
  const paths: Record<string, Json> = {};
  for (const id of referenceOrder()) {
    const operation: Operation = operations[id];
    const entry: Entry = REFERENCE[id];
    for (const { path, withAgent } of documentedPaths(operation)) {
      paths[path] = { ...paths[path], [operation.method]: operationObject(id, operation, entry, withAgent) };
    }
  }
  return {
    openapi: "3.0.3",
    info: {
      title: "agenthost",
      version: "0.10.0",
      description: "Hosts LangGraph.js agents over HTTP: runs, streams, history and feedback per conversation.",
    },
    servers: [{ url: "/", description: "This service" }],
    tags: [...REFERENCE_GROUPS],
    components: {
      schemas: componentSchemas(),
      headers: HEADERS,
      parameters: { RequestId: REQUEST_ID_PARAMETER, IdempotencyKey: IDEMPOTENCY_KEY_PARAMETER },
      securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
    },
    security: [{ bearer: [] }],
    paths,
  };
}
