import { documentedPath, type Operation } from "./operation.ts";

/**
 * The route table's paths as patterns a request path is matched against: the dispatcher's
 * (mount-operations.ts), and the route label of a request answered before it got there. Nothing
 * here imports more than the table's types, so the request's own middleware can use it.
 */

/** One segment of an operation's path: a literal (compared without case, as Express does) or a parameter. */
type Segment = { readonly literal: string } | { readonly param: string };

/** An operation's path as the dispatcher matches it: its segments, after an optional agent segment when agent-scoped. */
export interface PathPattern {
  readonly segments: readonly Segment[];
  readonly agentScoped: boolean;
}

/** An operation's path as a pattern. */
export function patternOf(operation: Operation): PathPattern {
  const segments = operation.path
    .split("/")
    .slice(1)
    .map((part): Segment => (part.startsWith(":") ? { param: part.slice(1) } : { literal: part.toLowerCase() }));
  return { segments, agentScoped: operation.agentScoped };
}

/** The request path's segments: without the leading slash, and without one trailing slash (Express's non-strict routing). */
export function segmentsOf(path: string): string[] {
  const parts = path.split("/");
  parts.shift();
  if (parts.length > 1 && parts[parts.length - 1] === "") parts.pop();
  return parts;
}

/** The raw (still percent-encoded) parameters when `parts` is the pattern's path (`agentId` for a named agent); undefined when it is not. */
export function rawParams(pattern: PathPattern, parts: readonly string[]): Array<[string, string]> | undefined {
  const offset = parts.length - pattern.segments.length;
  if (offset !== 0 && !(offset === 1 && pattern.agentScoped)) return undefined;
  const raw: Array<[string, string]> = [];
  if (offset === 1) {
    if (!parts[0]) return undefined;
    raw.push(["agentId", parts[0]]);
  }
  for (let i = 0; i < pattern.segments.length; i++) {
    const segment = pattern.segments[i]!;
    const part = parts[i + offset]!;
    if ("literal" in segment) {
      if (part.toLowerCase() !== segment.literal) return undefined;
    } else if (part) raw.push([segment.param, part]);
    else return undefined;
  }
  return raw;
}

/**
 * The route label the dispatcher gives a request (`/{agent_id}/invoke`), for one answered before it
 * got there: refused by authentication (401, 403), fair share (429) or admission (503), or a body
 * that is not JSON (422), cannot be decoded (400) or is too large (413). As the dispatcher: the public operations first, then the table's
 * order; the first whose path and method match, else the first whose path matches (a 405).
 * `undefined` for a path no operation has. Labels come only from the table, so no path can add one.
 */
export function routeLabeler(operations: Readonly<Record<string, Operation>>): (method: string, path: string) => string | undefined {
  const all = Object.values(operations);
  const entries = [...all.filter((operation) => operation.public), ...all.filter((operation) => !operation.public)].map((operation) => ({
    method: operation.method.toUpperCase(),
    pattern: patternOf(operation),
    withAgent: documentedPath(operation, true),
    without: documentedPath(operation, false),
  }));
  return (method, path) => {
    const parts = segmentsOf(path);
    let pathOnly: string | undefined;
    for (const entry of entries) {
      const raw = rawParams(entry.pattern, parts);
      if (!raw) continue;
      const label = raw[0]?.[0] === "agentId" ? entry.withAgent : entry.without;
      if (entry.method === method || (method === "HEAD" && entry.method === "GET")) return label;
      pathOnly ??= label;
    }
    return pathOnly;
  };
}
