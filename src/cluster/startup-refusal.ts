import net from "node:net";
import type { Config } from "../config/schema.ts";

/**
 * What the primary checks before it forks any worker, and what it prints when a check fails: one
 * line naming the setting to change (see docs/operations.md, Startup refusals).
 */

/** A startup refusal: one line, printed on stderr; the primary exits STARTUP_REFUSED. */
export class StartupRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StartupRefusal";
  }
}

/** The first code in an error (AggregateError from a dual-stack connect holds one per address). */
export function codeOf(error: unknown): string | undefined {
  const e = error instanceof AggregateError && error.errors.length ? (error.errors[0] as unknown) : error;
  const code = (e as { code?: unknown } | undefined)?.code;
  if (typeof code === "string") return code;
  if (e instanceof Error && /timeout/i.test(e.message)) return "timeout";
  return undefined;
}

/**
 * Why HOST:PORT (or HOST:METRICS_PORT, with `setting`) could not be listened on, as the one line
 * that names the setting to change.
 */
export function portRefusal(error: unknown, config: Pick<Config, "HOST" | "PORT">, setting: "PORT" | "METRICS_PORT" = "PORT"): StartupRefusal {
  const code = codeOf(error);
  const port = config.PORT;
  if (code === "EADDRINUSE") {
    const other = setting === "PORT" ? "" : " (0 lets the system pick one)";
    return new StartupRefusal(`${setting} ${port} is already in use on ${config.HOST}: stop the process holding it, or set ${setting} to a free port${other}`);
  }
  if (code === "EACCES") {
    return new StartupRefusal(`${setting} ${port} needs privileges this process does not have: set ${setting} above 1023`);
  }
  if (code === "EADDRNOTAVAIL" || code === "ENOTFOUND" || code === "EAI_AGAIN") {
    return new StartupRefusal(`HOST ${config.HOST} is not an address of this machine: set HOST to 0.0.0.0, 127.0.0.1 or one of its addresses`);
  }
  return new StartupRefusal(`${setting} ${port} on HOST ${config.HOST} cannot be listened on (${code ?? "unknown error"})`);
}

/** Fails when PORT cannot be bound on HOST: a busy port must not reach the workers, who would crash-loop on it. */
export async function checkPort(config: Pick<Config, "HOST" | "PORT">): Promise<void> {
  if (config.PORT === 0) return;
  const server = net.createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen({ port: config.PORT, host: config.HOST, exclusive: true }, resolve);
    });
  } catch (error) {
    throw portRefusal(error, config);
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

