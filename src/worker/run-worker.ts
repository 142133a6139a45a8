import type http from "node:http";
import { loadConfig } from "../config/load.ts";
import type { Config } from "../config/schema.ts";
import { createApp } from "../http/app.ts";
import { listen } from "../http/server.ts";
import { buildRuntime, type Runtime } from "../runtime.ts";

/** Print a startup refusal (configuration or registry problems) and exit non-zero. */
function refuseToStart(error: unknown): never {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`${message}\n`);
  process.exit(2);
}

/**
 * Stop accepting, let in-flight requests finish within SHUTDOWN_GRACE, then close everything.
 * New requests during the drain get 503 with `Connection: close`.
 */
async function drain(server: http.Server, runtime: Runtime, config: Config): Promise<void> {
  runtime.lifecycle.draining = true;
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const grace = new Promise<void>((resolve) => setTimeout(resolve, config.SHUTDOWN_GRACE * 1000).unref());
  await Promise.race([closed, grace]);
  server.closeAllConnections();
  await runtime.close();
}

/** Build and serve one worker; returns once it is listening. */
export async function runWorker(): Promise<void> {
  let config: Config;
  let runtime: Runtime;
  try {
    config = loadConfig();
    runtime = await buildRuntime(config);
  } catch (error) {
    refuseToStart(error);
  }
  const server = await listen(createApp(runtime), config);
  runtime.logger.info({ host: config.HOST, port: config.PORT, backend: config.MEMORY_BACKEND }, "listening");

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    runtime.logger.info({ signal }, "shutting down");
    drain(server, runtime, config).then(
      () => process.exit(0),
      (error: unknown) => {
        runtime.logger.error({ err: error }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}
