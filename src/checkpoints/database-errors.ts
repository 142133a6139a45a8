import Database from "./sqlite-driver.ts";
import pg from "pg";

export type DatabaseBackend = "filedb" | "serverdb";

/**
 * The checkpoint database could not do what was asked: unreachable, timed out, busy, full, or not
 * set up yet. The storage layer raises it (see GuardedSaver); the HTTP layer answers 503
 * `database_unavailable`. `cause` keeps the driver's error for logs (see describeDatabaseFailure).
 */
export class DatabaseUnavailableError extends Error {
  constructor(
    readonly backend: DatabaseBackend,
    cause: unknown,
  ) {
    super(`the ${backend} checkpoint database is unavailable`, { cause });
    this.name = "DatabaseUnavailableError";
  }
}

/** Socket-level failures on the way to a database server. */
const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENETDOWN",
  "EHOSTDOWN",
]);

/** The errors node-postgres raises itself (no SQLSTATE) when a connection fails or times out. */
const PG_CLIENT_FAILURE =
  /^(Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|Client was closed and is not queryable|Cannot use a pool after calling end)/;

/** Errors only a database driver raises: any SQLite error, any error PostgreSQL reported, pg's own. */
function isDriverError(error: unknown): boolean {
  if (error instanceof Database.SqliteError || error instanceof pg.DatabaseError) return true;
  return error instanceof Error && PG_CLIENT_FAILURE.test(error.message);
}

function isNetworkError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return error instanceof Error && typeof code === "string" && NETWORK_CODES.has(code);
}

/** Whether `error` or an error it wraps (cause chain, AggregateError) satisfies `test`. */
function anyInChain(error: unknown, test: (e: unknown) => boolean): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 5; depth++) {
    if (test(e)) return true;
    if (e instanceof AggregateError && e.errors.some(test)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * For the storage boundary, where every error comes from a database call: true when the database
 * itself failed (a driver error, or a socket error on the way to the server). Errors of the saver's
 * own logic (serialization, a malformed config) are not database failures.
 */
export function isDatabaseFailure(error: unknown): boolean {
  return anyInChain(error, (e) => e instanceof DatabaseUnavailableError || isDriverError(e) || isNetworkError(e));
}

/**
 * For classification far from the database (a run's error, the error middleware): true only for
 * what cannot be anything else, a DatabaseUnavailableError or a driver's own error. A bare
 * ECONNREFUSED there could as well be the model provider's.
 */
export function isDatabaseError(error: unknown): boolean {
  return anyInChain(error, (e) => e instanceof DatabaseUnavailableError || isDriverError(e));
}

/** `error` as the storage layer raises it: a DatabaseUnavailableError when the database failed, else unchanged. */
export function asDatabaseError(backend: DatabaseBackend, error: unknown): unknown {
  if (error instanceof DatabaseUnavailableError) return error;
  return isDatabaseFailure(error) ? new DatabaseUnavailableError(backend, error) : error;
}

/** Text that may hold a connection string or credentials: URLs, `password=...`. */
const SECRETS = /\b[a-z][a-z0-9+.-]*:\/\/\S+|password\s*[=:]\s*\S+/gi;

/**
 * A database failure for a log line: the driver's code and first message line, with anything that
 * looks like a connection string or password removed. No stack, no query text, no parameters.
 */
export function describeDatabaseFailure(error: unknown): { backend?: DatabaseBackend; code?: string; reason: string } {
  let backend: DatabaseBackend | undefined;
  let e: unknown = error;
  for (let depth = 0; e instanceof DatabaseUnavailableError && depth < 5; depth++) {
    backend = e.backend;
    e = e.cause;
  }
  if (e instanceof AggregateError && e.errors.length) e = e.errors[0];
  const code = (e as { code?: unknown } | undefined)?.code;
  const message = e instanceof Error ? e.message : typeof e === "string" ? e : "unknown failure";
  const reason = (message.split("\n")[0] ?? "").replace(SECRETS, "[redacted]").slice(0, 200);
  return {
    ...(backend ? { backend } : {}),
    ...(typeof code === "string" ? { code } : {}),
    reason,
  };
}
