import cluster from "node:cluster";
import type http from "node:http";
import type { AddressInfo } from "node:net";
import { portRefusal } from "../cluster/startup-refusal.ts";
import { STARTUP_REFUSED, workerChannel, type ToPrimary } from "../coordination/protocol.ts";
import { loadConfig } from "../config/load.ts";
import { RunAborted } from "../errors/classify.ts";
import type { Config } from "../config/schema.ts";
import { createApp } from "../http/app.ts";
import { listen } from "../http/server.ts";
import { createLogger, logFatalErrors } from "../observability/logger.ts";
import { buildRuntime, type WorkerRuntime } from "../runtime.ts";
import { watchParent } from "./parent-watch.ts";
import { answerPrimary } from "./primary-link.ts";

/** How long runs stopped at the end of a drain's grace get to settle and answer before the connections close. */
const STOPPED_RUNS_SETTLE_MS = 2_000;

/** How often a draining worker closes connections that went idle after their last response. */
const IDLE_SWEEP_MS = 100;

/**
 * Refuse to start (configuration or registry problems) and exit STARTUP_REFUSED. Alone, the worker
 * prints its refusal on stderr. Under the primary it hands it over instead: every worker of the first
 * generation meets the same problem, and the primary prints the first one only.
 */
function refuseToStart(error: unknown): Promise<never> {
  const message = error instanceof Error ? error.message : String(error);
  const exit = () => process.exit(STARTUP_REFUSED);
  if (cluster.isWorker && process.connected && process.send) {
    const refused: ToPrimary = { ah: "refused", message };
    process.send(refused, undefined, {}, (sendError) => {
      if (sendError) process.stderr.write(`${message}\n`);
      exit();
    });
    return new Promise<never>(() => {});
  }
  process.stderr.write(`${message}\n`);
  return exit();
}

/**
 * Stop accepting, let in-flight requests and streams finish within SHUTDOWN_GRACE, stop the runs
 * still going (shutting_down), then close everything. Requests arriving on open connections meanwhile get 503 with `Connection: close`
 * (admission middleware); connections close as soon as they fall idle.
 */
async function drain(server: http.Server, runtime: WorkerRuntime, config: Config): Promise<void> {
  runtime.lifecycle.draining = true;
  // Background runs: none taken from now on; those executing go on while the requests finish.
  runtime.background.stopClaiming();
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
  let graceTimer: NodeJS.Timeout | undefined;
  const grace = new Promise<void>((resolve) => {
    graceTimer = setTimeout(resolve, config.SHUTDOWN_GRACE * 1000);
  });
  await Promise.race([closed, grace]);
  clearTimeout(graceTimer);
  clearInterval(sweep);
  // The background runs still executing go back to their queue and continue on another worker.
  await runtime.background.handBack();
  // Runs still going when the grace ran out end as shutting_down (counted, their spans ended, an
  // error answer or event to their clients) before the connections close under them.
  if (runtime.activeRuns.stopAll(new RunAborted("shutdown")) > 0) {
    let settleTimer: NodeJS.Timeout | undefined;
    await Promise.race([runtime.activeRuns.settled(), new Promise<void>((resolve) => (settleTimer = setTimeout(resolve, STOPPED_RUNS_SETTLE_MS)))]);
    clearTimeout(settleTimer);
    // A settled run's answer is written in the turns after it left the conversation.
    await new Promise((resolve) => setImmediate(resolve));
  }
  server.closeAllConnections();
  await runtime.close();
}

/**
 * Build and serve one worker; returns once it is listening. Under the cluster primary it also
 * answers liveness and metrics requests and reports when it listens; alone it is a one-process
 * service (development, tests).
 */
export async function runWorker(): Promise<void> {
  let config: Config;
  let runtime: WorkerRuntime;
  const inCluster = cluster.isWorker;
  try {
    config = loadConfig();
    const logger = inCluster ? createLogger(config).child({ worker: cluster.worker!.id }) : createLogger(config);
    logFatalErrors(logger);
    runtime = await buildRuntime(config, { logger });
  } catch (error) {
    return refuseToStart(error);
  }
  runtime.metrics.collectProcessMetrics();
  let server: http.Server;
  try {
    server = await listen(createApp(runtime), config, runtime.logger, runtime.shortcuts);
  } catch (error) {
    // Under the primary the port was checked before the fork; a worker started alone checks here.
    return refuseToStart(new Error(`agenthost cannot start: ${portRefusal(error, config).message}`));
  }
  const { port } = server.address() as AddressInfo;
  runtime.logger.info({ host: config.HOST, port, backend: config.MEMORY_BACKEND }, "listening");

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

  if (inCluster) {
    // A worker whose primary is gone drains and exits, whether or not its IPC channel says so.
    watchParent(() => {
      runtime.logger.warn({ ppid: process.ppid }, "the primary is gone");
      stop("primary gone");
    });
    const channel = workerChannel();
    answerPrimary(channel, runtime);
    channel.send({ ah: "listening", port });
  }
}
