import type { RawRequest } from "./raw-http.ts";

/**
 * A request being mutated: the body as a value (mutations edit it), raw fragments spliced into
 * its JSON text where a value cannot say what the bytes must be (1e400, invalid UTF-8, nesting
 * deeper than JSON.stringify can write), or a raw body replacing it altogether.
 */
export interface Draft {
  method: string;
  path: string;
  /** Query items (`name=value`, or anything else), exactly as they go on the wire. */
  query: string[];
  headers: Array<[string, string]>;
  body: unknown;
  hasBody: boolean;
  rawBody?: Buffer;
  splices: Map<string, Buffer>;
  contentLength: boolean;
  version?: string;
}

export type Key = string | number;

const SENTINEL = (n: number) => `@@splice-${n}@@`;

/** A placeholder value whose JSON text will be replaced by `raw` exactly. */
export function splice(draft: Draft, raw: Buffer | string): string {
  const sentinel = SENTINEL(draft.splices.size);
  draft.splices.set(sentinel, typeof raw === "string" ? Buffer.from(raw, "utf8") : raw);
  return sentinel;
}

export function renderBody(draft: Draft): Buffer | undefined {
  if (draft.rawBody) return draft.rawBody;
  if (!draft.hasBody) return undefined;
  let parts: Array<string | Buffer> = [JSON.stringify(draft.body) ?? "null"];
  for (const [sentinel, raw] of draft.splices) {
    const quoted = JSON.stringify(sentinel);
    parts = parts.flatMap((part) => {
      if (typeof part !== "string" || !part.includes(quoted)) return [part];
      const pieces = part.split(quoted);
      return pieces.flatMap((piece, i) => (i === 0 ? [piece] : [raw, piece]));
    });
  }
  return Buffer.concat(parts.map((part) => (typeof part === "string" ? Buffer.from(part, "utf8") : part)));
}

export function render(draft: Draft): RawRequest {
  const query = draft.query.join("&");
  const body = renderBody(draft);
  return {
    method: draft.method,
    target: draft.path + (draft.query.length ? `?${query}` : ""),
    headers: draft.headers,
    ...(body ? { body } : {}),
    contentLength: draft.contentLength,
    ...(draft.version ? { version: draft.version } : {}),
  };
}

/** Paths to every node of `value` (the root is `[]`), breadth first, at most `limit`. */
export function nodePaths(value: unknown, limit = 300): Key[][] {
  const out: Key[][] = [];
  const queue: Array<{ value: unknown; path: Key[] }> = [{ value, path: [] }];
  while (queue.length && out.length < limit) {
    const { value: node, path } = queue.shift()!;
    out.push(path);
    if (Array.isArray(node)) node.forEach((child: unknown, i) => queue.push({ value: child, path: [...path, i] }));
    else if (node && typeof node === "object") for (const [k, child] of Object.entries(node)) queue.push({ value: child, path: [...path, k] });
  }
  return out;
}

export function getAt(root: unknown, path: readonly Key[]): unknown {
  let node = root;
  for (const key of path) node = (node as Record<Key, unknown> | undefined)?.[key];
  return node;
}

/** `root` with the node at `path` replaced (a fresh copy along the path; the root itself when path is empty). */
export function setAt(root: unknown, path: readonly Key[], value: unknown): unknown {
  if (path.length === 0) return value;
  const [head, ...rest] = path;
  const copy = (Array.isArray(root) ? [...(root as unknown[])] : { ...(root as Record<string, unknown>) }) as Record<Key, unknown>;
  // defineProperty, so that a key such as "__proto__" becomes an own property as JSON.parse makes it.
  Object.defineProperty(copy, head!, { value: setAt(copy[head!], rest, value), enumerable: true, writable: true, configurable: true });
  return copy;
}
