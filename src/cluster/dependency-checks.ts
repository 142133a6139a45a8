import type { Redis } from "ioredis";
import type pg from "pg";
import type { Config } from "../config/schema.ts";
import { codeOf, StartupRefusal } from "./startup-refusal.ts";

/**
 * The primary's checks of the checkpoint database and Redis before it forks any worker. Their
 * drivers load only when the setting is there.
 */

/** How long the Redis check waits for an answer. */
const REDIS_CHECK_TIMEOUT_MS = 3_000;

/** Network failures that may pass by themselves (the server is starting, restarting, or not there yet). */
const UNREACHABLE = new Set(["ECONNREFUSED", "ETIMEDOUT", "ECONNRESET", "EHOSTUNREACH", "ENETUNREACH", "EPIPE", "timeout", "LOADING"]);

/** What the production warning adds to an unreachable database's or Redis's message. */
const STARTING_ANYWAY = "ENV_MODE=production: starting anyway, not ready";

/** A connection URL without its password or query, safe to print. */
export function displayUrl(raw: string): string {
  try {
    const url = new URL(raw);
    const user = url.username ? `${url.username}@` : "";
    return `${url.protocol}//${user}${url.host}${url.pathname}`;
  } catch {
    return "(not a URL)";
  }
}

/** The outcome of a dependency check the service can start without: the problem, to log as a warning. */
export interface Unreachable {
  readonly setting: "DATABASE_URL" | "REDIS_URL";
  readonly message: string;
}

/**
 * Connect once to the serverdb database. A misconfiguration (no such database, credentials refused,
 * unknown host, malformed URL) is a refusal: it will not pass by itself. A server that does not
 * answer may be starting: in development that is a refusal too; in production the workers start not
 * ready and wait for it (docs/operations.md, Database outages), so it is returned for a warning.
 */
export async function checkDatabase(config: Config): Promise<Unreachable | undefined> {
  if (config.MEMORY_BACKEND !== "serverdb") return undefined;
  const shown = displayUrl(config.DATABASE_URL);
  let client: pg.Client;
  try {
    const { default: driver } = await import("pg");
    client = new driver.Client({ connectionString: config.DATABASE_URL, connectionTimeoutMillis: config.SERVERDB_CONNECT_TIMEOUT * 1000 });
  } catch {
    throw new StartupRefusal("DATABASE_URL is not a PostgreSQL connection string: write it as postgres://user:password@host:5432/database");
  }
  client.on("error", () => {});
  try {
    await client.connect();
    await client.query("SELECT 1");
    return undefined;
  } catch (error) {
    const code = codeOf(error);
    const where = `${client.host}:${client.port}`;
    switch (code) {
      case "3D000":
        throw new StartupRefusal(
          `DATABASE_URL ${shown}: database "${client.database}" does not exist on ${where}: create it (createdb -h ${client.host} -p ${client.port} ${client.database}) or name an existing one in DATABASE_URL`,
        );
      case "28P01":
      case "28000":
        throw new StartupRefusal(`DATABASE_URL ${shown}: ${where} refused user "${client.user}" (${code === "28P01" ? "wrong password" : "not allowed"}): correct the user or password in DATABASE_URL`);
      case "ENOTFOUND":
      case "EAI_AGAIN":
        throw new StartupRefusal(`DATABASE_URL ${shown}: the host "${client.host}" cannot be resolved: correct the host in DATABASE_URL`);
      default:
        break;
    }
    const reason = code && UNREACHABLE.has(code) ? (code === "ECONNREFUSED" ? "connection refused" : code === "timeout" ? `no answer within SERVERDB_CONNECT_TIMEOUT (${config.SERVERDB_CONNECT_TIMEOUT} s)` : code) : `${code ?? "error"}`;
    const message = `DATABASE_URL ${shown}: no PostgreSQL answers at ${where} (${reason}): start PostgreSQL there or correct DATABASE_URL`;
    if (config.ENV_MODE === "development" || !(code && UNREACHABLE.has(code))) throw new StartupRefusal(message);
    return { setting: "DATABASE_URL", message: `${message}. ${STARTING_ANYWAY} (/health/ready and conversation requests answer 503 database_unavailable until it answers)` };
  } finally {
    void client.end().catch(() => {});
  }
}

/** What Redis answers an AUTH with a password it has no use for (Redis 6+, then 5 and older). */
const PASSWORD_NOT_ASKED = ["without any password configured for the default user", "no password is set"];
/** What Redis 5 and older answer an AUTH with a user name. */
const USER_NOT_TAKEN = "wrong number of arguments for 'auth' command";

/**
 * The URL without its user and password, and the AUTH arguments they make (as ioredis sends them),
 * when it has a password. The check sends that AUTH itself to read Redis's answer: the one a Redis
 * with no use for the password gives ioredis becomes only a raw warning on stderr, and the service
 * goes on (docs/operations.md, Redis).
 */
function withoutCredentials(raw: string): { url: string; auth: string[] } | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  if (!url.password) return undefined;
  const auth = url.username ? [decodeURIComponent(url.username), decodeURIComponent(url.password)] : [decodeURIComponent(url.password)];
  url.username = "";
  url.password = "";
  return { url: url.href, auth };
}

/** Send REDIS_URL's AUTH; a password or user name Redis cannot take but goes on without is a warning, any other refusal throws. */
async function authenticate(client: Redis, auth: string[], shown: string): Promise<Unreachable | undefined> {
  try {
    await client.call("AUTH", ...auth);
    return undefined;
  } catch (error) {
    const reply = error instanceof Error ? error.message : "";
    if (PASSWORD_NOT_ASKED.some((text) => reply.includes(text))) {
      return {
        setting: "REDIS_URL",
        message: `REDIS_URL ${shown} carries a password this Redis does not ask for (it answered AUTH that none is set): remove the password from REDIS_URL, or set one on the Redis server`,
      };
    }
    if (reply.includes(USER_NOT_TAKEN)) {
      return {
        setting: "REDIS_URL",
        message: `REDIS_URL ${shown} carries a user name and a password, which Redis 5 and older cannot take: keep only the password in REDIS_URL (redis://:password@host:6379)`,
      };
    }
    throw error;
  }
}

/**
 * PING the REDIS_URL Redis once. Not answering is a refusal in development; in production the
 * workers start and readiness fails until it answers (returned for a warning). A password or user
 * name Redis has no use for is returned for a warning too. Anything else (a refused password, an
 * unknown host, a malformed URL) is a refusal.
 */
export async function checkRedis(config: Config): Promise<Unreachable | undefined> {
  if (!config.REDIS_URL) return undefined;
  const shown = displayUrl(config.REDIS_URL);
  const credentials = withoutCredentials(config.REDIS_URL);
  let client: Redis;
  try {
    const { Redis: RedisClient } = await import("ioredis");
    client = new RedisClient(credentials?.url ?? config.REDIS_URL, {
      lazyConnect: true,
      connectTimeout: REDIS_CHECK_TIMEOUT_MS,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      // Its INFO would come before the AUTH this check sends, and a Redis that wants the password refuses it.
      enableReadyCheck: credentials === undefined,
    });
  } catch {
    throw new StartupRefusal("REDIS_URL is not a Redis URL: write it as redis://host:6379 (or rediss:// for TLS)");
  }
  // ioredis rejects connect() with "Connection is closed."; the socket's own error comes as an event.
  let socketError: unknown;
  client.on("error", (error) => {
    socketError ??= error;
  });
  try {
    await client.connect();
    const warning = credentials && (await authenticate(client, credentials.auth, shown));
    await client.ping();
    return warning;
  } catch (rejection) {
    // Redis's own answer to a command says what happened; a connection that failed says it in its error event.
    const error = rejection instanceof Error && rejection.name === "ReplyError" ? rejection : (socketError ?? rejection);
    // A Redis still loading its data answers LOADING (ioredis's ready check, off when this check sends AUTH, would wait).
    const code = error instanceof Error && error.message.startsWith("LOADING") ? "LOADING" : codeOf(error);
    const alone = "or unset REDIS_URL on a single host (the primary then keeps the conversation locks)";
    if (code === "ENOTFOUND" || code === "EAI_AGAIN") {
      throw new StartupRefusal(`REDIS_URL ${shown}: the host cannot be resolved: correct the host in REDIS_URL, ${alone}`);
    }
    if (!(code && UNREACHABLE.has(code))) {
      const first = error instanceof Error ? (error.message.split("\n")[0] ?? "").replace(/\S+:\/\/\S+/g, "[url]").slice(0, 120) : "unknown error";
      throw new StartupRefusal(`REDIS_URL ${shown}: Redis refused the connection (${first}): correct REDIS_URL, ${alone}`);
    }
    const reason =
      code === "ECONNREFUSED" ? "connection refused" : code === "timeout" ? `no answer within ${REDIS_CHECK_TIMEOUT_MS / 1000} s` : code === "LOADING" ? "it is loading its data" : code;
    const message = `REDIS_URL ${shown}: no Redis answers (${reason}): start Redis there, correct REDIS_URL, ${alone}`;
    if (config.ENV_MODE === "development") throw new StartupRefusal(message);
    return { setting: "REDIS_URL", message: `${message}. ${STARTING_ANYWAY} (/health/ready and runs answer 503 lock_unavailable until it answers)` };
  } finally {
    client.disconnect();
  }
}
