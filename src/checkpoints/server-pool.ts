import pg from "pg";

export interface ServerPoolOptions {
  readonly connectionString: string;
  readonly max: number;
  /** Bound on opening a connection and on waiting for a pooled one. */
  readonly connectTimeoutMs: number;
  /** Server-side statement_timeout; the client gives up QUERY_REPLY_MARGIN later. */
  readonly queryTimeoutMs: number;
  /** Every connection error, from idle and checked-out clients alike. Must not throw. */
  readonly onConnectionError: (error: Error) => void;
}

/** How long past statement_timeout the client waits for a reply before it abandons the connection. */
const QUERY_REPLY_MARGIN_MS = 1_000;
/** First TCP keep-alive probe after this much idle time. */
const KEEPALIVE_DELAY_MS = 10_000;
/** Idle pooled connections are closed after this long. */
const IDLE_TIMEOUT_MS = 30_000;

/**
 * A pg.Client that can never crash the process and never goes back to the pool broken:
 *
 * - it listens for its own 'error' event from birth. pg-pool listens only while a client is idle,
 *   so a connection that dies while checked out (PostgresSaver.put, our transactions) would
 *   otherwise be an unhandled 'error' event and end the worker;
 * - when a query's reply does not arrive within query_timeout (dropped packets), it destroys the
 *   socket. pg leaves the timed-out query active on the connection, and PostgresSaver releases
 *   clients without an error, so the pool would hand that wedged connection out again.
 */
function guardedClientClass(onConnectionError: (error: Error) => void): typeof pg.Client {
  return class GuardedClient extends pg.Client {
    constructor(config?: string | pg.ClientConfig) {
      super(config);
      this.on("error", onConnectionError);
      const query = this.query.bind(this) as (...args: unknown[]) => unknown;
      const guarded = (...args: unknown[]): unknown => {
        const result = query(...args);
        if (result instanceof Promise) result.catch((error: unknown) => this.abandonIfTimedOut(error));
        return result;
      };
      this.query = guarded as pg.Client["query"];
    }

    private abandonIfTimedOut(error: unknown): void {
      if (error instanceof Error && error.message === "Query read timeout") this.connection.stream.destroy();
    }
  };
}

/**
 * The PostgreSQL pool of one worker, bounded in time everywhere: connecting (and waiting for a
 * free connection) by `connectTimeoutMs`; each statement by the server's statement_timeout and,
 * when no reply comes at all, by the client's query_timeout; a transaction left idle by a client
 * that vanished by idle_in_transaction_session_timeout; dead idle peers by TCP keep-alive.
 */
export function createServerPool(options: ServerPoolOptions): pg.Pool {
  const { queryTimeoutMs } = options;
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max,
    Client: guardedClientClass(options.onConnectionError),
    connectionTimeoutMillis: options.connectTimeoutMs,
    idleTimeoutMillis: IDLE_TIMEOUT_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
    statement_timeout: queryTimeoutMs,
    query_timeout: queryTimeoutMs + Math.min(QUERY_REPLY_MARGIN_MS, queryTimeoutMs),
    idle_in_transaction_session_timeout: Math.max(10_000, 2 * queryTimeoutMs),
  });
  // pg-pool re-emits an idle client's error here (the client has already been removed).
  pool.on("error", (error) => options.onConnectionError(error));
  return pool;
}
