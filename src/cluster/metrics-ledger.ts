import { AggregatorRegistry } from "prom-client";
import type { MetricsJson } from "../observability/metrics.ts";

const MONOTONIC = new Set(["counter", "histogram"]);

function seriesKey(name: string, value: { metricName?: string; labels: Record<string, unknown> }): string {
  const labels = Object.keys(value.labels)
    .sort()
    .map((k) => `${k}=${String(value.labels[k])}`)
    .join(",");
  return `${value.metricName ?? name}{${labels}}`;
}

async function sum(parts: MetricsJson[]): Promise<MetricsJson> {
  return parts.length === 0 ? [] : AggregatorRegistry.aggregate(parts).getMetricsAsJSON();
}

/**
 * Keeps the cluster's summed counters monotonic across worker restarts. A dead worker's counters
 * and histograms (as of its last report) are carried into a "retired" sum, and every rendered
 * counter is at least what was rendered before, so Prometheus never reads a restart as a counter
 * reset. Increments a worker made after its last report are lost: at most one liveness interval.
 */
export class MetricsLedger {
  private retired: MetricsJson = [];
  private readonly latest = new Map<number, MetricsJson>();
  private readonly floor = new Map<string, number>();

  /** The newest service-metrics snapshot of a live worker. */
  record(workerId: number, app: MetricsJson): void {
    this.latest.set(workerId, app);
  }

  /** A worker is gone: keep its counters and histograms, drop its gauges. */
  async retire(workerId: number): Promise<void> {
    const last = this.latest.get(workerId);
    this.latest.delete(workerId);
    if (!last) return;
    const monotonic = last.filter((metric) => MONOTONIC.has(String(metric.type)));
    this.retired = await sum([this.retired, monotonic]);
  }

  /** The live workers' snapshots plus the retired sum, with monotonic series clamped. */
  async combine(apps: MetricsJson[]): Promise<MetricsJson> {
    const combined = await sum([...apps, this.retired]);
    for (const metric of combined) {
      if (!MONOTONIC.has(String(metric.type))) continue;
      for (const value of metric.values) {
        const key = seriesKey(metric.name, value);
        const clamped = Math.max(value.value, this.floor.get(key) ?? 0);
        this.floor.set(key, clamped);
        value.value = clamped;
      }
    }
    return combined;
  }
}
