import { test } from "node:test";
import assert from "node:assert/strict";
import { MetricsLedger } from "../../src/cluster/metrics-ledger.ts";
import { ServiceMetrics, type MetricsJson } from "../../src/observability/metrics.ts";

function value(metrics: MetricsJson, name: string, labels: Record<string, string>): number | undefined {
  const metric = metrics.find((m) => m.name === name);
  return metric?.values.find((v) => Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want))?.value;
}

test("the primary sums agenthost_stream_cuts_total over its workers and keeps a dead worker's cuts", async () => {
  const [first, second] = [new ServiceMetrics(), new ServiceMetrics()];
  first.streamCuts.inc({ reason: "slow_consumer" });
  second.streamCuts.inc({ reason: "slow_consumer" }, 2);
  second.streamCuts.inc({ reason: "deadline" });
  const ledger = new MetricsLedger();
  const [a, b] = [await first.registry.getMetricsAsJSON(), await second.registry.getMetricsAsJSON()];
  ledger.record(1, a);
  ledger.record(2, b);

  const both = await ledger.combine([a, b]);
  assert.equal(value(both, "agenthost_stream_cuts_total", { reason: "slow_consumer" }), 3);
  assert.equal(value(both, "agenthost_stream_cuts_total", { reason: "deadline" }), 1);

  // Worker 2 dies; its counts stay in the sum.
  await ledger.retire(2);
  const after = await ledger.combine([a]);
  assert.equal(value(after, "agenthost_stream_cuts_total", { reason: "slow_consumer" }), 3);
  assert.equal(value(after, "agenthost_stream_cuts_total", { reason: "deadline" }), 1);
});
