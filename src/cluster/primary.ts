import cluster, { type Worker } from "node:cluster";
import type http from "node:http";
import type { AddressInfo } from "node:net";
import { decideLibraryShortcuts } from "../config/library-shortcuts.ts";
import { loadConfig } from "../config/load.ts";
import type { Config } from "../config/schema.ts";
import { createLogger, logFatalErrors, type Logger } from "../observability/logger.ts";
import { PrimaryMetrics, renderClusterMetrics, type MetricsJson } from "../observability/metrics.ts";
import { checkTypeScriptAgents, TypeScriptAgentRefusal } from "../agents/typescript-loader.ts";
import { PrimaryBrokers } from "../coordination/brokers.ts";
import { FairShareLimits } from "../admission/fair-share-limits.ts";
import { warnIfFeedbackGoesNowhere } from "../feedback/delivery.ts";
import { MetricsLedger } from "./metrics-ledger.ts";
import { startMetricsServer } from "./metrics-server.ts";
import { checkDatabase, checkRedis } from "./dependency-checks.ts";
import { checkPort, portRefusal, StartupRefusal } from "./startup-refusal.ts";
import { MessageBatcher, messagesIn, STARTUP_REFUSED, type ToPrimary, type ToWorker } from "../coordination/protocol.ts";
import { RestartBudget } from "./restart-budget.ts";
import { WORKER_ENTRY, workerExecArgv } from "./worker-entry.ts";

/** A worker that has not listened by then is replaced. */
const STARTUP_TIMEOUT_MS = 120_000;
/** How long one metrics collection waits for each worker. */
const METRICS_COLLECT_TIMEOUT_MS = 2_000;
/** Past SHUTDOWN_GRACE, how long a worker may take to exit before it is killed. */
const KILL_MARGIN_MS = 5_000;
/** Exit code when the workers crash-loop. */
const CRASH_LOOP = 1;

type Retirement = "exited" | "unresponsive" | "stalled" | "startup_timeout";

interface Member {
  readonly worker: Worker;
  /** 0..WEB_CONCURRENCY-1; a replacement inherits the slot (the bounded `worker` metric label). */
  readonly slot: number;
  /** Forked at startup (a startup refusal there stops the primary). */
  readonly initial: boolean;
  listening: boolean;
  /** What the primary sends the worker, batched per turn of the event loop. */
  readonly outbox: MessageBatcher<ToWorker>;
  retiring?: Retirement;
  /** When the unanswered liveness question was sent (performance.now), if one is pending. */
  askedAt?: number;
  seq?: number;
  startupTimer?: NodeJS.Timeout;
}

/** Print a startup refusal as one line on stderr (no logger line, no stack) and exit STARTUP_REFUSED. */
function refuse(message: string): never {
  process.stderr.write(`agenthost cannot start: ${message}\n`);
  process.exit(STARTUP_REFUSED);
}

/**
 * The supervising primary: validates the configuration, checks PORT, that TypeScript AGENT_PATHS
 * files can be loaded, the database and Redis, forks WEB_CONCURRENCY workers, polls their liveness over IPC, replaces dead, unresponsive and stalled ones with backoff, exits
 * non-zero on a crash loop, brokers conversation locks (without REDIS_URL), serves the
 * aggregated metrics, and on SIGTERM/SIGINT drains the workers and exits.
 */
export async function runPrimary(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(STARTUP_REFUSED);
  }
  const logger = createLogger(config).child({ role: "primary" });
  logFatalErrors(logger);
  // One warning per library shortcut left off for a version; the workers decide alike and log theirs at debug.
  decideLibraryShortcuts(config.LIBRARY_SHORTCUTS, logger);
  warnIfFeedbackGoesNowhere(config, logger);
  const supervisor = new Supervisor(config, logger);
  await supervisor.start();
}

class Supervisor {
  private readonly metrics = new PrimaryMetrics();
  private readonly ledger = new MetricsLedger();
  /** Locks, cancels and run events across the workers, and a dead worker's Redis leases. */
  private readonly brokers: PrimaryBrokers;
  private readonly members = new Map<number, Member>();
  private readonly budget: RestartBudget;
  private readonly forkTimers = new Set<NodeJS.Timeout>();
  private readonly metricsWaiters = new Map<string, (message: Extract<ToPrimary, { ah: "metrics" }>) => void>();
  private metricsServer?: http.Server;
  private pollTimer?: NodeJS.Timeout;
  private seq = 0;
  private shuttingDown = false;
  private exitCode = 0;
  /** Whether a first-generation worker's startup refusal has been printed (only the first one is). */
  private refusalPrinted = false;

  constructor(
    private readonly config: Config,
    private readonly logger: Logger,
  ) {
    this.brokers = new PrimaryBrokers(config, logger);
    this.budget = new RestartBudget(config.WORKER_RESTART_LIMIT, config.WORKER_RESTART_WINDOW * 1000);
  }

  async start(): Promise<void> {
    const { config, logger } = this;
    try {
      await checkPort(config);
      await checkTypeScriptAgents(config.AGENT_PATHS);
      const unreachable = await Promise.all([checkDatabase(config), checkRedis(config)]);
      for (const problem of unreachable) {
        if (problem) logger.warn({ setting: problem.setting }, problem.message);
      }
    } catch (error) {
      if (error instanceof StartupRefusal || error instanceof TypeScriptAgentRefusal) refuse(error.message);
      throw error;
    }
    this.brokers.connect();
    try {
      this.metricsServer = await startMetricsServer(config.HOST, config.METRICS_PORT, () => this.collect(), logger);
    } catch (error) {
      refuse(portRefusal(error, { HOST: config.HOST, PORT: config.METRICS_PORT }, "METRICS_PORT").message);
    }
    const metricsPort = (this.metricsServer.address() as AddressInfo).port;
    // Workers accept connections themselves (the kernel spreads them). Under Node's default
    // round-robin the primary accepts each connection and passes it over IPC, and one passed to a
    // worker that has just died is never answered nor closed: the client hangs.
    cluster.schedulingPolicy = cluster.SCHED_NONE;
    cluster.setupPrimary({ exec: WORKER_ENTRY, execArgv: workerExecArgv() });
    cluster.on("exit", (worker, code, signal) => this.onExit(worker, code, signal));
    process.on("SIGTERM", () => this.shutdown("SIGTERM"));
    process.on("SIGINT", () => this.shutdown("SIGINT"));
    logger.info(
      {
        workers: config.WEB_CONCURRENCY,
        port: config.PORT,
        metrics_port: metricsPort,
        locks: config.REDIS_URL ? "redis" : "primary",
        fair_share: new FairShareLimits(config).on ? (config.REDIS_URL ? "redis" : "primary") : "off",
      },
      "primary starting",
    );
    for (let slot = 0; slot < config.WEB_CONCURRENCY; slot++) this.fork(slot, true);
    this.pollTimer = setInterval(() => this.poll(), config.WORKER_LIVENESS_INTERVAL * 1000);
  }

  private fork(slot: number, initial: boolean): void {
    if (this.shuttingDown) return;
    const worker = cluster.fork();
    const member: Member = {
      worker,
      slot,
      initial,
      listening: false,
      outbox: new MessageBatcher((message) => {
        if (worker.isConnected()) worker.send(message);
      }),
    };
    this.members.set(worker.id, member);
    this.metrics.workers.set(this.members.size);
    this.brokers.attach(worker.id, (message) => this.send(member, message));
    worker.on("error", () => {});
    worker.on("message", (message: unknown) => {
      for (const each of messagesIn<ToPrimary>(message)) this.onMessage(member, each);
    });
    member.startupTimer = setTimeout(() => {
      this.logger.error({ worker: worker.id, slot }, "worker did not start in time; replacing it");
      this.retire(member, "startup_timeout");
    }, STARTUP_TIMEOUT_MS);
    this.logger.info({ worker: worker.id, worker_pid: worker.process.pid, slot }, "worker forked");
  }

  /** Queue a message for the worker (it leaves in this turn's batch); nothing if it is going away, as its exit releases what it held. */
  private send(member: Member, message: ToWorker): void {
    if (member.worker.isConnected()) member.outbox.send(message);
  }

  private onMessage(member: Member, message: ToPrimary): void {
    if (this.brokers.handle(member.worker.id, message)) return;
    switch (message.ah) {
      case "listening":
        member.listening = true;
        clearTimeout(member.startupTimer);
        break;
      case "refused":
        if (member.initial && !member.listening) {
          // Every first-generation worker meets the same problem: print it once.
          if (!this.refusalPrinted) process.stderr.write(`${message.message}\n`);
          this.refusalPrinted = true;
        } else {
          this.logger.error({ worker: member.worker.id, reason: message.message.split("\n")[0] }, "a replacement worker refused to start");
        }
        break;
      case "live":
        this.ledger.record(member.worker.id, message.app);
        if (message.seq !== member.seq) break;
        member.askedAt = undefined;
        if (message.stalled > 0 && !member.retiring) {
          this.logger.error({ worker: member.worker.id, stalled_runs: message.stalled }, "worker has stalled runs; replacing it");
          this.retire(member, "stalled");
        }
        break;
      case "metrics":
        this.metricsWaiters.get(`${member.worker.id}:${message.seq}`)?.(message);
        break;
      case "lease":
      case "lock.acquire":
      case "lock.cancel":
      case "lock.release":
      case "lock.ready":
      case "lock.delegation":
      case "lock.returned":
      case "ping":
      case "run.cancel":
      case "run.stopped":
      case "events.open":
      case "events.append":
      case "events.end":
      case "events.read":
      case "events.stop":
      case "fair.admit":
      case "fair.release":
      case "fair.charge":
        break; // answered by the brokers above
    }
  }

  /** Ask every listening worker whether it is live; replace those that did not answer the last question in time. */
  private poll(): void {
    const now = performance.now();
    const timeoutMs = this.config.WORKER_LIVENESS_TIMEOUT * 1000;
    for (const member of this.members.values()) {
      if (!member.listening || member.retiring) continue;
      if (member.askedAt !== undefined) {
        if (now - member.askedAt > timeoutMs) {
          this.logger.error({ worker: member.worker.id }, "worker did not answer its liveness check; replacing it");
          this.retire(member, "unresponsive");
        }
        continue;
      }
      member.seq = ++this.seq;
      member.askedAt = now;
      this.send(member, { ah: "live?", seq: member.seq });
    }
  }

  /**
   * Replace a worker the primary gave up on. An unresponsive one is killed at once; a stalled one
   * drains like at shutdown (its healthy requests may finish) and is killed if it overstays.
   */
  private retire(member: Member, reason: Retirement): void {
    if (member.retiring) return;
    member.retiring = reason;
    clearTimeout(member.startupTimer);
    this.replace(member.slot, reason);
    if (reason === "stalled") {
      member.worker.process.kill("SIGTERM");
      setTimeout(() => member.worker.process.kill("SIGKILL"), this.config.SHUTDOWN_GRACE * 1000 + KILL_MARGIN_MS).unref();
    } else {
      member.worker.process.kill("SIGKILL");
    }
  }

  private onExit(worker: Worker, code: number | null, signal: string | null): void {
    const member = this.members.get(worker.id);
    this.members.delete(worker.id);
    this.metrics.workers.set(this.members.size);
    this.brokers.detach(worker.id);
    void this.ledger.retire(worker.id);
    if (!member) return;
    clearTimeout(member.startupTimer);
    if (this.shuttingDown) {
      this.logger.info({ worker: worker.id, code, signal }, "worker stopped");
      this.finishIfDone();
      return;
    }
    if (member.retiring) {
      this.logger.warn({ worker: worker.id, code, signal, reason: member.retiring }, "replaced worker exited");
      return;
    }
    if (member.initial && !member.listening && code === STARTUP_REFUSED) {
      this.logger.fatal({ worker: worker.id }, "a worker refused to start; stopping");
      // Its refusal travels over IPC, which may still hold it when the exit is seen: the channel's
      // close comes after its last message.
      const stop = () => {
        if (!this.refusalPrinted) process.stderr.write(`agenthost cannot start: worker ${worker.id} refused to start without saying why (see the log)\n`);
        this.refusalPrinted = true;
        this.shutdown("startup_refused", STARTUP_REFUSED);
      };
      if (worker.isConnected()) worker.once("disconnect", stop);
      else stop();
      return;
    }
    this.logger.error({ worker: worker.id, code, signal }, "worker exited; replacing it");
    this.replace(member.slot, "exited");
  }

  /** Count a restart and fork the slot's replacement after the backoff, or stop on a crash loop. */
  private replace(slot: number, reason: Retirement): void {
    this.metrics.workerRestarts.inc({ reason });
    const delay = this.budget.record();
    if (delay === undefined) {
      this.logger.fatal(
        { limit: this.config.WORKER_RESTART_LIMIT, window_s: this.config.WORKER_RESTART_WINDOW },
        "workers are crash-looping; stopping",
      );
      this.shutdown("crash_loop", CRASH_LOOP);
      return;
    }
    const timer = setTimeout(() => {
      this.forkTimers.delete(timer);
      this.fork(slot, false);
    }, delay);
    this.forkTimers.add(timer);
  }

  /** Collect every listening worker's metrics (skipping those that do not answer in time) and render them. */
  private async collect(): Promise<string> {
    const seq = ++this.seq;
    const targets = [...this.members.values()].filter((m) => m.listening && m.worker.isConnected());
    const snapshots = await Promise.all(
      targets.map(
        (member) =>
          new Promise<{ slot: number; app: MetricsJson; process: MetricsJson } | undefined>((resolve) => {
            const key = `${member.worker.id}:${seq}`;
            const timer = setTimeout(() => {
              this.metricsWaiters.delete(key);
              resolve(undefined);
            }, METRICS_COLLECT_TIMEOUT_MS);
            this.metricsWaiters.set(key, (message) => {
              clearTimeout(timer);
              this.metricsWaiters.delete(key);
              this.ledger.record(member.worker.id, message.app);
              resolve({ slot: member.slot, app: message.app, process: message.process });
            });
            this.send(member, { ah: "metrics?", seq });
          }),
      ),
    );
    const answered = snapshots.filter((s) => s !== undefined);
    this.metrics.scrapeMissing.set(targets.length - answered.length);
    const app = await this.ledger.combine(answered.map((s) => s.app));
    return renderClusterMetrics(this.metrics, app, answered);
  }

  /** Stop forking, ask every worker to drain (SIGTERM), kill those that overstay, then exit. */
  private shutdown(reason: string, exitCode = 0): void {
    if (this.shuttingDown) {
      this.logger.info({ reason }, "already shutting down");
      return;
    }
    this.shuttingDown = true;
    this.exitCode = exitCode;
    this.logger.info({ reason, grace_s: this.config.SHUTDOWN_GRACE }, "shutting down");
    clearInterval(this.pollTimer);
    for (const timer of this.forkTimers) clearTimeout(timer);
    this.forkTimers.clear();
    for (const member of this.members.values()) {
      clearTimeout(member.startupTimer);
      member.worker.process.kill("SIGTERM");
    }
    setTimeout(() => {
      for (const member of this.members.values()) {
        this.logger.error({ worker: member.worker.id }, "worker overstayed the shutdown grace; killing it");
        member.worker.process.kill("SIGKILL");
        this.exitCode ||= 1;
      }
    }, this.config.SHUTDOWN_GRACE * 1000 + KILL_MARGIN_MS);
    this.finishIfDone();
  }

  private finishIfDone(): void {
    if (!this.shuttingDown || this.members.size > 0) return;
    const exit = () => {
      this.brokers.close();
      this.logger.info({ code: this.exitCode }, "primary exiting");
      process.exit(this.exitCode);
    };
    if (this.metricsServer) {
      this.metricsServer.closeAllConnections();
      this.metricsServer.close(exit);
    } else {
      exit();
    }
  }
}
