// The API reference as /docs shows it: the operations of /openapi.json in the order Swagger UI lists
// them, and the request each one's "Try it out" sends before anything is typed.

export interface Parameter {
  readonly name: string;
  readonly in: "path" | "query" | "header";
  readonly required?: boolean;
  readonly example?: unknown;
  readonly schema?: { readonly default?: unknown };
  readonly $ref?: string;
}

interface DocumentedOperation {
  readonly operationId: string;
  readonly tags: readonly string[];
  readonly parameters?: readonly Parameter[];
  readonly requestBody?: { readonly required?: boolean; readonly content: Record<string, { readonly example?: unknown }> };
}

export interface ReferenceDocument {
  readonly tags: ReadonlyArray<{ readonly name: string }>;
  readonly paths: Record<string, Record<string, DocumentedOperation>>;
  readonly components: { readonly parameters: Record<string, Parameter> };
}

export interface ListedOperation {
  readonly id: string;
  readonly tag: string;
  readonly method: string;
  readonly path: string;
  readonly operation: DocumentedOperation;
}

/**
 * The operations as Swagger UI lists them: one group per tag, in the order of the document's tags,
 * each holding its operations in the order of the paths, then of the methods within a path.
 */
export function listed(document: ReferenceDocument): ListedOperation[] {
  const all = Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ id: operation.operationId, tag: operation.tags[0]!, method: method.toUpperCase(), path, operation })),
  );
  return document.tags.flatMap(({ name }) => all.filter((operation) => operation.tag === name));
}

/** A value as Swagger UI puts it in a parameter's field: strings as they are, anything else as JSON. */
function fieldText(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/**
 * What "Try it out" sends for `listed` when nothing is changed: path parameters from their
 * examples, the query parameters that have an example or a default, and the body's example. Throws
 * when a required parameter or a body has nothing to start from (the request could not be sent).
 */
export function tryItOut(document: ReferenceDocument, { method, path, operation }: ListedOperation): { method: string; url: string; body?: string } {
  const resolved = (operation.parameters ?? []).map((parameter) =>
    parameter.$ref ? document.components.parameters[parameter.$ref.split("/").pop()!]! : parameter,
  );
  let url = path;
  const query = new URLSearchParams();
  for (const parameter of resolved) {
    const value = parameter.example ?? parameter.schema?.default;
    if (value === undefined) {
      if (parameter.required) throw new Error(`${method} ${path}: the required ${parameter.in} parameter ${parameter.name} has no example`);
      continue;
    }
    if (parameter.in === "path") url = url.replace(`{${parameter.name}}`, encodeURIComponent(fieldText(value)));
    else if (parameter.in === "query") query.set(parameter.name, fieldText(value));
  }
  if (query.size) url += `?${query.toString()}`;
  if (!operation.requestBody) return { method, url };
  const example = operation.requestBody.content["application/json"]?.example;
  if (example === undefined) throw new Error(`${method} ${path}: the request body has no example`);
  return { method, url, body: JSON.stringify(example) };
}
