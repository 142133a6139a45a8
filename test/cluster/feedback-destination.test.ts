// Feedback with no destination (OBSERVABILITY_BACKEND=empty), said once at startup by the primary for
// all its workers (test/http/feedback-destination.test.ts: the answers, and a worker running alone).
import assert from "node:assert/strict";
import { test } from "node:test";
import { startCluster } from "./cluster-helper.ts";

const isWarning = (line: Record<string, unknown>) => line.setting === "OBSERVABILITY_BACKEND" && /^feedback is not recorded/.test(String(line.msg));

test("bin/agenthost with two workers: the primary warns once; the workers' copies are debug lines", { timeout: 120_000 }, async () => {
  const cluster = await startCluster({ LOG_LEVEL: "debug" });
  try {
    const warnings = cluster.logs.filter(isWarning);
    assert.equal(warnings.filter((line) => line.level === 40).length, 1, JSON.stringify(warnings));
    assert.equal(warnings.find((line) => line.level === 40)!.role, "primary");
    const workerCopies = warnings.filter((line) => line.level === 20);
    assert.deepEqual(new Set(workerCopies.map((line) => line.worker)), new Set([1, 2]));
  } finally {
    assert.equal(await cluster.stop(), 0);
  }
});
