import { Redis, type RedisOptions } from "ioredis";

const ERROR_REPORT_INTERVAL_MS = 10_000;

/** Passes on at most one connection problem per ERROR_REPORT_INTERVAL_MS, for every connection it is given to. */
export function throttledReport(onError: ((error: Error) => void) | undefined): (error: Error) => void {
  let lastReport = 0;
  return (error) => {
    const now = Date.now();
    if (now - lastReport < ERROR_REPORT_INTERVAL_MS) return;
    lastReport = now;
    onError?.(error);
  };
}

/**
 * A connection to the coordination Redis. It reconnects forever (readiness reports the outage
 * meanwhile) and gives its connection problems to `report`.
 */
export function connectRedis(url: string, report: (error: Error) => void, options: RedisOptions = {}): Redis {
  const client = new Redis(url, {
    connectTimeout: 2_000,
    retryStrategy: (times) => Math.min(100 * times, 1_000),
    maxRetriesPerRequest: 1,
    // Names the process in CLIENT LIST, so an operator (and a test) can tell whose connections they are.
    connectionName: `agenthost:${process.pid}`,
    ...options,
  });
  client.on("error", report);
  return client;
}
