import path from "node:path";
import { fileURLToPath } from "node:url";
import { pino, type Logger } from "pino";
import type { Config } from "../config/schema.ts";
import { stdoutLogDestination } from "./log-destination.ts";

export type { Logger };

/** Keys whose values never reach a log line: credentials and feedback proofs. */
const SECRET_KEYS: ReadonlySet<string> = new Set(["authorization", "token", "feedback_token", "api_key"]);

/** How deep into a log line's plain objects secrets are looked for (`req.headers.authorization` is three). */
const SECRET_DEPTH = 3;

const CENSOR = "[redacted]";

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/**
 * A log line's fields with every SECRET_KEYS value censored, at the top and in plain objects down
 * to SECRET_DEPTH levels (`token`, `body.feedback_token`, `req.headers.authorization`). The object
 * logged is never changed: a part that holds a secret is copied, everything else is the line as it
 * was, so a line without secrets (nearly all of them) costs one look at each of its keys. Errors are
 * not plain objects: their serializer (errorForLog) keeps nothing of them that could hold one.
 */
export function redactSecrets(fields: Record<string, unknown>, depth = 1): Record<string, unknown> {
  let out = fields;
  for (const key in fields) {
    const value = fields[key];
    let replacement = value;
    if (SECRET_KEYS.has(key)) replacement = CENSOR;
    else if (depth < SECRET_DEPTH && isPlainObject(value)) replacement = redactSecrets(value, depth + 1);
    if (replacement === value) continue;
    if (out === fields) out = { ...fields };
    out[key] = replacement;
  }
  return out;
}

/**
 * The project's root folder, as stack frames name it (plain path and file: URL): two levels up from
 * this file in src/, three from its compiled copy in dist/src/.
 */
const PROJECT_ROOT = path.resolve(fileURLToPath(new URL(import.meta.url.endsWith(".js") ? "../../.." : "../..", import.meta.url))) + path.sep;
const PROJECT_ROOT_URL = `file://${PROJECT_ROOT}`;

/** A stack with the project's absolute paths made relative to it (`src/…`, `node_modules/…`). */
export function relativeStack(stack: string): string {
  return stack.split(PROJECT_ROOT_URL).join("").split(PROJECT_ROOT).join("");
}

/**
 * How `err` appears in a log line. Only unexpected internal errors are logged with `err` (expected
 * failures, such as a provider's or the database's, are logged by type and code): its type, message,
 * code and a stack relative to the project, never the error's other properties, which can hold
 * request options, headers or keys.
 */
export function errorForLog(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { type: typeof error, message: String(error) };
  const out: Record<string, unknown> = { type: error.name, message: error.message };
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" || typeof code === "number") out.code = code;
  if (error.stack) out.stack = relativeStack(error.stack);
  if (error.cause instanceof Error) out.cause_type = error.cause.name;
  return out;
}

/**
 * A connection problem (Redis, a socket) as log fields: its type, code and the first line of its
 * message, with any URL in it left out (it could carry a password), at most 200 characters. For
 * driver errors whose text says what happened ("connect ECONNREFUSED 127.0.0.1:6379"), never for a
 * provider's (failureForLog).
 */
export function connectionProblemForLog(error: unknown): { err_type: string; err_code?: string | number; reason: string } {
  const text = error instanceof Error ? error.message : typeof error === "string" ? error : "";
  const reason = (text.split("\n")[0] ?? "").replace(/\S+:\/\/\S+/g, "[url]").slice(0, 200) || "(no message)";
  return { ...failureForLog(error), reason };
}

/** An expected failure (database, provider, network) as log fields: its type and code, no text. */
export function failureForLog(error: unknown): { err_type: string; err_code?: string | number } {
  const code = (error as { code?: unknown } | null)?.code;
  const out: { err_type: string; err_code?: string | number } = { err_type: error instanceof Error ? error.name : typeof error };
  if (typeof code === "string" || typeof code === "number") out.err_code = code;
  return out;
}

/**
 * JSON lines on stdout, written in batches (stdoutLogDestination), or on a given destination (tests).
 */
export function createLogger(config: Pick<Config, "LOG_LEVEL">, destination?: NodeJS.WritableStream): Logger {
  const options = {
    level: config.LOG_LEVEL,
    base: { pid: process.pid },
    // Not pino's `redact`: its wildcard paths (`*.api_key`) pass every field of every line through a
    // redactor that clones and serialises, about 10 KB of allocation per request (docs/performance.md).
    formatters: { log: (fields: Record<string, unknown>) => redactSecrets(fields) },
    serializers: { err: errorForLog },
  };
  return pino(options, destination ?? stdoutLogDestination());
}

/**
 * Uncaught exceptions and unhandled rejections are logged as one JSON line (level fatal) instead of
 * Node's multi-line print to stderr, then the process exits 1 as Node would have: a worker is
 * replaced by the primary.
 */
export function logFatalErrors(logger: Logger): void {
  const fatal = (kind: string) => (error: unknown) => {
    logger.fatal({ err: error }, kind);
    process.exit(1);
  };
  process.on("uncaughtException", fatal("uncaught exception"));
  process.on("unhandledRejection", fatal("unhandled rejection"));
}
