import { readFileSync } from "node:fs";
import os from "node:os";

/** Reads a file's text, or undefined when it cannot be read. */
export type ReadText = (file: string) => string | undefined;

const readText: ReadText = (file) => {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
};

/**
 * The CPUs a container's CPU quota allows, rounded up, or undefined when there is no quota: cgroup v2
 * `cpu.max` ("<quota> <period>", or "max <period>"), else cgroup v1's `cpu.cfs_quota_us` (-1 = none)
 * over `cpu.cfs_period_us`. The process's cgroup is the root of its namespace inside a container.
 */
export function cpuQuota(read: ReadText = readText): number | undefined {
  const v2 = read("/sys/fs/cgroup/cpu.max")?.trim().split(/\s+/);
  if (v2) return quotaOf(v2[0], v2[1]);
  return quotaOf(read("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")?.trim(), read("/sys/fs/cgroup/cpu/cpu.cfs_period_us")?.trim());
}

function quotaOf(quota: string | undefined, period: string | undefined): number | undefined {
  const q = Number(quota);
  const p = Number(period);
  if (!Number.isFinite(q) || !Number.isFinite(p) || q <= 0 || p <= 0) return undefined;
  return Math.max(1, Math.ceil(q / p));
}

/**
 * The default WEB_CONCURRENCY: the CPUs this process may use, which is the smaller of
 * `os.availableParallelism()` (the CPUs it may be scheduled on) and the container's CPU quota (which
 * Node 20 does not see).
 */
export function availableCpus(read: ReadText = readText, parallelism = os.availableParallelism()): number {
  const quota = cpuQuota(read);
  return quota === undefined ? parallelism : Math.min(parallelism, quota);
}
