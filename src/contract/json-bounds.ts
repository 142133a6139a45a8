import { z } from "zod";

/**
 * Bounds on the free-form JSON a request may carry (metadata, custom data, tool arguments,
 * agent_config, resume values, feedback metadata). Whatever we store must be readable again:
 * LangChain's deserializer refuses a message nested deeper than 50 levels, counted from the
 * message itself, and a free-form field starts up to 5 levels down (tool_calls[i].args), so 32
 * leaves room. The size bound keeps one field from costing more than the rest of the message.
 *
 * An object with an `lc` key is refused too: it is LangChain's serialization marker, and the
 * checkpoint deserializer would act on it when the conversation is read back (instantiate a
 * class, or fail on a `secret` and leave the conversation unreadable).
 */
export const JSON_MAX_DEPTH = 32;
export const JSON_MAX_BYTES = 1024 * 1024;

export const RESERVED_KEY = "lc";

/**
 * How `value` breaks the bounds, or undefined when it keeps them. Depth counts containers: a
 * scalar is 0, `{}` and `[]` are 1, `{"a": {}}` is 2. The size is the JSON text's length, near
 * enough (UTF-16 units). Iterative, so no nesting can overflow the stack, and it stops at the first
 * bound crossed, so a hostile value costs at most JSON_MAX_BYTES of walking.
 */
export function jsonBoundsProblem(value: unknown, maxDepth = JSON_MAX_DEPTH, maxBytes = JSON_MAX_BYTES): string | undefined {
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 0 }];
  let bytes = 0;
  while (stack.length) {
    const { value: item, depth } = stack.pop()!;
    if (typeof item === "string") bytes += item.length + 2;
    else if (typeof item === "number" || typeof item === "boolean" || typeof item === "bigint") bytes += String(item).length;
    else if (item === null || item === undefined) bytes += 4;
    else if (typeof item === "object") {
      if (depth + 1 > maxDepth) return `nested deeper than ${maxDepth} levels`;
      bytes += 2;
      if (Array.isArray(item)) {
        for (const element of item as unknown[]) {
          bytes += 1;
          stack.push({ value: element, depth: depth + 1 });
        }
      } else {
        if (Object.hasOwn(item, RESERVED_KEY)) return `holds an object with an "${RESERVED_KEY}" key, reserved for LangChain's serialization format`;
        for (const [key, element] of Object.entries(item as Record<string, unknown>)) {
          bytes += key.length + 4;
          stack.push({ value: element, depth: depth + 1 });
        }
      }
    } else {
      return "is not JSON";
    }
    if (bytes > maxBytes) return `larger than ${maxBytes} bytes as JSON`;
  }
  return undefined;
}

/** Refuse, at this schema's path, a value outside the JSON bounds. */
function refineBounds(value: unknown, ctx: z.RefinementCtx): void {
  const problem = jsonBoundsProblem(value);
  if (problem) ctx.addIssue({ code: "custom", message: problem });
}

/** Any JSON value within the bounds. */
export function boundedJson() {
  return z.unknown().superRefine(refineBounds);
}

/** A JSON object within the bounds (`z.record(string, unknown)` plus the depth and size check). */
export function boundedRecord() {
  return z.record(z.string(), z.unknown()).superRefine(refineBounds);
}

/** A description suffix for the OpenAPI document. */
export const BOUNDS_NOTE = `At most ${JSON_MAX_DEPTH} levels deep and ${JSON_MAX_BYTES} bytes as JSON; no object may have an "${RESERVED_KEY}" key.`;

/**
 * Keys no request body may use anywhere: the members every JavaScript object inherits
 * (`__proto__`, `constructor`, `toString`, `valueOf`, `hasOwnProperty`, …) and `prototype`. As data
 * they replace an object's prototype when copied (`target[key] = value`), or make ordinary agent
 * code fail (`String(answer)` on an object whose `toString` is a string) — and a resume value that
 * fails the agent stays pending in the checkpoint, so the conversation would fail on every turn.
 */
export const SHADOWING_KEYS: ReadonlySet<string> = new Set([...Object.getOwnPropertyNames(Object.prototype), "prototype"]);

/** The path (`a.0.b`) of the first key in `value` that SHADOWING_KEYS refuses, if any. Iterative. */
export function shadowingKeyPath(value: unknown): string | undefined {
  type Node = { value: unknown; key: string | undefined; parent: Node | undefined };
  const pathOf = (node: Node, last: string) => {
    const keys = [last];
    for (let n: Node | undefined = node; n?.key !== undefined; n = n.parent) keys.unshift(n.key);
    return keys.join(".");
  };
  const stack: Node[] = [{ value, key: undefined, parent: undefined }];
  while (stack.length) {
    const node = stack.pop()!;
    const item = node.value;
    if (typeof item !== "object" || item === null) continue;
    if (Array.isArray(item)) {
      (item as unknown[]).forEach((element, i) => stack.push({ value: element, key: String(i), parent: node }));
      continue;
    }
    for (const key of Object.keys(item)) {
      if (SHADOWING_KEYS.has(key)) return pathOf(node, key);
      stack.push({ value: (item as Record<string, unknown>)[key], key, parent: node });
    }
  }
  return undefined;
}
