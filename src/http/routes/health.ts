import { Router } from "express";
import type { Runtime } from "../../runtime.ts";

const PROBE_TIMEOUT_MS = 2_000;

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error("probe timed out")), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** Readiness problems, empty when the worker should receive traffic. Reveals no data. */
export async function readinessProblems(runtime: Runtime): Promise<string[]> {
  const problems: string[] = [];
  if (runtime.lifecycle.draining) problems.push("shutting_down");
  if (runtime.checkpoints.saturated()) problems.push("database_saturated");
  await withTimeout(runtime.checkpoints.ping(), PROBE_TIMEOUT_MS).catch(() => problems.push("database_unreachable"));
  await withTimeout(runtime.locks.ping(), PROBE_TIMEOUT_MS).catch(() => problems.push("lock_service_unreachable"));
  return problems;
}

/** Probes: no authentication, no data beyond pass/fail and the failing check's name. */
export function healthRoutes(runtime: Runtime, isLive: () => boolean = () => true): Router {
  const router = Router();
  router.get("/health/live", (_req, res) => {
    const live = isLive();
    res.status(live ? 200 : 503).json({ status: live ? "ok" : "stalled" });
  });
  router.get("/health/ready", async (_req, res) => {
    const problems = await readinessProblems(runtime);
    res.status(problems.length ? 503 : 200).json(problems.length ? { status: "unavailable", checks: problems } : { status: "ok" });
  });
  return router;
}
