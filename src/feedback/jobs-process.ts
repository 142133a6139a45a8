import { loadConfig } from "../config/load.ts";
import { createLogger } from "../observability/logger.ts";
import { createObservabilityBackend } from "../observability/backends/index.ts";
import { startFeedbackWorker } from "./queue.ts";

function refuseToStart(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(2);
}

/**
 * The side-work process (workers/jobs.ts): consumes the feedback queue and nothing else. HTTP
 * workers consume it too, so this process is optional; run it to keep delivery going on a host
 * that serves no traffic, or to scale delivery apart from HTTP. Same environment as the workers.
 */
export async function runJobsProcess(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    refuseToStart(error instanceof Error ? error.message : String(error));
  }
  if (!config.REDIS_URL) refuseToStart("workers/jobs.ts consumes the feedback queue, which needs REDIS_URL");
  if (config.OBSERVABILITY_BACKEND === "empty") refuseToStart("OBSERVABILITY_BACKEND is empty: there is no feedback to deliver");
  const logger = createLogger(config);
  let backend;
  try {
    backend = await createObservabilityBackend(config);
  } catch (error) {
    refuseToStart(error instanceof Error ? error.message : String(error));
  }
  const worker = startFeedbackWorker(config.REDIS_URL, config, backend, logger);
  logger.info({ backend: backend.kind }, "feedback queue consumer started");

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
    // BullMQ's close waits for the jobs in progress.
    worker
      .close()
      .then(() => backend.close())
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}
