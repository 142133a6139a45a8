import { pino, type Logger } from "pino";
import type { Config } from "../config/schema.ts";

export type { Logger };

/** Paths redacted wherever they appear in a log line: credentials and feedback proofs. */
export const REDACTED_PATHS = [
  "req.headers.authorization",
  "headers.authorization",
  "authorization",
  "token",
  "feedback_token",
  "*.feedback_token",
  "body.feedback_token",
  "api_key",
  "*.api_key",
];

/** JSON lines on stdout (or a given destination, for tests). */
export function createLogger(config: Pick<Config, "LOG_LEVEL">, destination?: NodeJS.WritableStream): Logger {
  const options = {
    level: config.LOG_LEVEL,
    base: { pid: process.pid },
    redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
  };
  return destination ? pino(options, destination) : pino(options);
}
