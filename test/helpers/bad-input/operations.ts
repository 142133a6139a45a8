import type { Random } from "./random.ts";

/** The part of JSON Schema (as /openapi.json writes it) that request generation reads. */
export interface JsonSchema {
  $ref?: string;
  type?: string;
  enum?: unknown[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  nullable?: boolean;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  pattern?: string;
}

interface Parameter {
  name: string;
  in: "path" | "query" | "header";
  required?: boolean;
  schema?: JsonSchema;
}

/** One method on one path of /openapi.json. */
export interface Operation {
  readonly method: string;
  /** The path template, e.g. `/{agent_id}/invoke` or `/invoke`. */
  readonly template: string;
  readonly query: readonly Parameter[];
  /** The request body's schema id (components/schemas), when the operation takes a body. */
  readonly bodySchemaId: string | undefined;
  readonly bodyRequired: boolean;
  readonly authenticated: boolean;
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, { parameters?: Parameter[]; requestBody?: { required?: boolean; content?: Record<string, { schema?: JsonSchema }> }; security?: unknown[] }>>;
  components: { schemas: Record<string, JsonSchema> };
}

const METHODS = ["get", "post", "put", "patch", "delete", "head", "options"];

/** Every operation the document lists. */
export function operationsOf(document: OpenApiDocument): Operation[] {
  const out: Operation[] = [];
  for (const [template, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (!METHODS.includes(method)) continue;
      const schema = operation.requestBody?.content?.["application/json"]?.schema;
      out.push({
        method: method.toUpperCase(),
        template,
        query: (operation.parameters ?? []).filter((p) => p.in === "query"),
        bodySchemaId: schema?.$ref?.split("/").pop(),
        bodyRequired: operation.requestBody?.required ?? false,
        authenticated: !(Array.isArray(operation.security) && operation.security.length === 0),
      });
    }
  }
  return out;
}

/** The methods the document allows on each path template. */
export function methodsByPath(operations: readonly Operation[]): Map<string, Set<string>> {
  const map = new Map<string, Set<string>>();
  for (const op of operations) {
    const set = map.get(op.template) ?? new Set<string>();
    set.add(op.method);
    map.set(op.template, set);
  }
  return map;
}

export function resolve(document: OpenApiDocument, schema: JsonSchema): JsonSchema {
  let current = schema;
  for (let hops = 0; current.$ref && hops < 10; hops++) {
    const id = current.$ref.split("/").pop()!;
    current = document.components.schemas[id] ?? {};
  }
  return current;
}

/** A string for a `pattern` the service's schemas use; anything else gets plain text. */
function stringFor(schema: JsonSchema, random: Random): string {
  if (schema.pattern?.includes("https?")) return random.pick(["https://example.com/cat.png", "data:image/png;base64,iVBORw0KGgo="]);
  if (schema.pattern?.includes("\\/")) return random.pick(["image/png", "application/pdf", "audio/wav"]);
  const min = schema.minLength ?? 0;
  const max = Math.min(schema.maxLength ?? 24, 24);
  const length = random.int(Math.max(min, 1), Math.max(min, max, 1));
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 -_";
  let text = "";
  for (let i = 0; i < length; i++) text += alphabet[random.int(0, alphabet.length - 1)];
  return text;
}

/**
 * A value shaped by `schema`: right types, required fields, some optional ones. It is often
 * valid, never guaranteed to be (cross-field rules are not in the schema): the point is variety.
 */
export function exampleOf(document: OpenApiDocument, schema: JsonSchema, random: Random, depth = 0): unknown {
  const s = resolve(document, schema);
  if (s.nullable && random.chance(0.1)) return null;
  if (s.enum?.length) return random.pick(s.enum);
  const choices = s.anyOf ?? s.oneOf;
  if (choices?.length) return exampleOf(document, random.pick(choices), random, depth + 1);
  switch (s.type) {
    case "string":
      return stringFor(s, random);
    case "integer":
      return random.int(s.minimum ?? 0, Math.min(s.maximum ?? 50, (s.minimum ?? 0) + 50));
    case "number":
      return Math.round(random.float() * 1000) / 100;
    case "boolean":
      return random.chance(0.5);
    case "array": {
      if (!s.items || depth > 6) return [];
      const count = random.int(s.minItems ?? 0, Math.min(s.maxItems ?? 3, (s.minItems ?? 0) + 3));
      return Array.from({ length: count }, () => exampleOf(document, s.items!, random, depth + 1));
    }
    case "object":
    default: {
      if (depth > 6) return {};
      const out: Record<string, unknown> = {};
      for (const [name, property] of Object.entries(s.properties ?? {})) {
        if (s.required?.includes(name) || random.chance(0.4)) out[name] = exampleOf(document, property, random, depth + 1);
      }
      if (s.additionalProperties !== false && random.chance(0.3)) out[`extra_${random.int(0, 99)}`] = random.pick(["v", 1, true, { k: [1, 2] }]);
      return out;
    }
  }
}
