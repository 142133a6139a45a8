import type { Runtime } from "../http-runtime.ts";
import type { Handlers } from "./services.ts";

const PROBE_TIMEOUT_MS = 2_000;
/** How long one answer to the dependency checks is reused: probes cannot load the database. */
export const READINESS_CACHE_MS = 1_000;

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error("probe timed out")), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * The dependency checks behind readiness (saturation, database, lock service), run at most once
 * per READINESS_CACHE_MS however many probes arrive: concurrent probes share one check, and a
 * check reads the saturation signal before its own ping, so probes never count as load. Anyone
 * who can reach /health/ready can therefore not flip it; only the service's own state can.
 */
export class ReadinessChecks {
  private last: { at: number; problems: readonly string[] } | undefined;
  private inFlight: Promise<readonly string[]> | undefined;

  constructor(
    private readonly runtime: Runtime,
    private readonly now: () => number = () => performance.now(),
  ) {}

  async problems(): Promise<string[]> {
    const dependencies = await this.dependencies();
    return this.runtime.lifecycle.draining ? ["shutting_down", ...dependencies] : [...dependencies];
  }

  private dependencies(): Promise<readonly string[]> {
    if (this.last && this.now() - this.last.at < READINESS_CACHE_MS) return Promise.resolve(this.last.problems);
    this.inFlight ??= this.check().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private async check(): Promise<readonly string[]> {
    const { checkpoints, locks } = this.runtime;
    const problems: string[] = [];
    if (checkpoints.saturated()) problems.push("database_saturated");
    const [database, lockService] = await Promise.allSettled([
      withTimeout(checkpoints.ping(), PROBE_TIMEOUT_MS),
      withTimeout(locks.ping(), PROBE_TIMEOUT_MS),
    ]);
    if (database.status === "rejected") problems.push("database_unreachable");
    if (lockService.status === "rejected") problems.push("lock_service_unreachable");
    this.last = { at: this.now(), problems };
    return problems;
  }
}

/** Probes: no authentication, no data beyond pass/fail and the failing check's name. */
export function healthHandlers(runtime: Runtime, isLive: () => boolean): Pick<Handlers, "liveness" | "readiness"> {
  const readiness = new ReadinessChecks(runtime);
  return {
    liveness: () => (isLive() ? { status: 200, body: { status: "ok" } } : { status: 503, body: { status: "stalled" } }),
    readiness: async () => {
      const problems = await readiness.problems();
      return problems.length ? { status: 503, body: { status: "unavailable", checks: problems } } : { status: 200, body: { status: "ok" } };
    },
  };
}
