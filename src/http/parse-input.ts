import type { z } from "zod";
import { shadowingKeyPath } from "../contract/json-bounds.ts";
import { ServiceError } from "../errors/service-error.ts";

type Issue = z.core.$ZodIssue;

/** A union branch refused only because the value is another kind of thing (a list where a string may be). */
const wrongKind = (branch: readonly Issue[]) => branch.length === 1 && branch[0]!.code === "invalid_type" && branch[0]!.path.length === 0;

/**
 * The issues to report: a union the value failed (`input.message`: a string or a list of blocks)
 * reports the issues of the one branch of the value's kind, when there is one, instead of zod's
 * bare "Invalid input", so a bad content block says what is wrong with it.
 */
function reportable(issues: readonly Issue[], prefix: readonly PropertyKey[] = []): Issue[] {
  return issues.flatMap((issue): Issue[] => {
    const path = [...prefix, ...issue.path];
    if (issue.code === "invalid_union") {
      const branches = issue.errors.filter((branch) => !wrongKind(branch));
      if (branches.length === 1) return reportable(branches[0]!, path);
    }
    return [{ ...issue, path }];
  });
}

/** Render zod issues as one readable line for `detail`. */
function describeIssues(error: z.ZodError): string {
  return reportable(error.issues)
    .slice(0, 5)
    .map((issue) => (issue.path.length ? `${issue.path.join(".")}: ${issue.message}` : issue.message))
    .join("; ");
}

function parseWith<T extends z.ZodType>(schema: T, value: unknown): z.output<T> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new ServiceError("validation_failed", { detail: describeIssues(parsed.error) });
  return parsed.data;
}

/**
 * Validate a request body: first that no key anywhere shadows a built-in object member (see
 * SHADOWING_KEYS; checked on the raw JSON, before parsing copies keys into new objects), then the
 * schema. No body reads as `{}`.
 */
export function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  const shadowing = shadowingKeyPath(body);
  if (shadowing) {
    throw new ServiceError("validation_failed", {
      detail: `${shadowing}: this key names a member every JavaScript object has (such as __proto__, constructor, toString) and is not accepted`,
    });
  }
  return parseWith(schema, body ?? {});
}

/** Validate the query parameters (a repeated parameter arrives as a list, which the schema refuses). */
export function parseQuery<T extends z.ZodType>(schema: T, query: unknown): z.output<T> {
  return parseWith(schema, query);
}

/**
 * A body whose fields may also come as query parameters: both together, refused when they disagree.
 * A body that is not an object is left for the schema to refuse.
 */
export function bodyWithQuery(body: unknown, query: Record<string, unknown>): unknown {
  const fromBody = body ?? {};
  if (typeof fromBody !== "object" || fromBody === null || Array.isArray(fromBody)) return fromBody;
  const fields = fromBody as Record<string, unknown>;
  const fromQuery = Object.fromEntries(Object.entries(query));
  for (const name of Object.keys(fromQuery)) {
    if (name in fields && fields[name] !== fromQuery[name]) {
      throw new ServiceError("validation_failed", { detail: `${name}: the body and the query disagree` });
    }
  }
  return { ...fromQuery, ...fields };
}
