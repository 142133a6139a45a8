import type { Logger } from "./logger.ts";

/**
 * ioredis writes a few of its own warnings with console.warn, as raw text on stderr, once per
 * connection: with three Redis clients in each worker a newcomer sees the same line many times and
 * never the setting to change. These are its AUTH warnings: each becomes one log line per process
 * naming REDIS_URL; every other console.warn passes through untouched.
 */
const REDIS_AUTH_WARNINGS: readonly { readonly match: string; readonly message: string }[] = [
  {
    match: "does not require a password, but a password was supplied",
    message: "REDIS_URL carries a password this Redis does not ask for (ioredis sent AUTH and was told none is set): remove the password from REDIS_URL, or set one on the Redis server",
  },
  {
    match: "wrong number of arguments for 'auth' command",
    message: "REDIS_URL carries a user name and a password, which Redis 5 and older cannot take: keep only the password in REDIS_URL (redis://:password@host:6379)",
  },
];

/**
 * Route ioredis's console warnings through `logger`, once each per process, at `level` (the
 * primary warns; its workers, whose clients meet the same server, log at debug). Returns a function
 * that puts console.warn back.
 */
export function routeRedisClientWarnings(logger: Logger, level: "warn" | "debug" = "warn"): () => void {
  const original = console.warn;
  const logged = new Set<string>();
  const routed = (...args: unknown[]): void => {
    const text = typeof args[0] === "string" ? args[0] : "";
    const known = REDIS_AUTH_WARNINGS.find((warning) => text.includes(warning.match));
    if (!known) {
      original.apply(console, args);
      return;
    }
    if (logged.has(known.message)) return;
    logged.add(known.message);
    logger[level]({ setting: "REDIS_URL", source: "ioredis" }, known.message);
  };
  console.warn = routed;
  return () => {
    if (console.warn === routed) console.warn = original;
  };
}
