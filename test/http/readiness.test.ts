// Readiness that only the service can flip: probes share one cached check and never count as
// database load, on the PostgreSQL backend whose pool saturation is part of readiness.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { READINESS_CACHE_MS } from "../../src/http/routes/health.ts";
import { startService, type RunningService } from "../helpers/service.ts";
import { postgresBackend } from "./history-backends.ts";

const backend = postgresBackend();
let service: RunningService;
let pings = 0;

before(async () => {
  service = await startService(backend.env);
  const checkpoints = service.runtime.checkpoints as { ping: () => Promise<void> };
  const ping = checkpoints.ping.bind(checkpoints);
  checkpoints.ping = () => {
    pings++;
    return ping();
  };
});
after(async () => {
  await service?.close();
  await backend.cleanup();
});

const probe = async () => (await fetch(`${service.url}/health/ready`)).status;

test("200 concurrent readiness probes all answer 200 and cost one database check per second", async () => {
  const before = pings;
  const started = performance.now();
  const statuses = await Promise.all(Array.from({ length: 200 }, probe));
  const seconds = Math.ceil((performance.now() - started) / READINESS_CACHE_MS);
  assert.deepEqual([...new Set(statuses)], [200]);
  // One check per cache period the probes spanned (a loaded machine may take more than one).
  assert.ok(pings - before <= seconds + 1, `${pings - before} database checks for 200 probes over ${seconds} s`);
});

test("draining shows at once, without waiting for the cached check", async () => {
  assert.equal(await probe(), 200);
  service.runtime.lifecycle.draining = true;
  try {
    const response = await fetch(`${service.url}/health/ready`);
    assert.equal(response.status, 503);
    assert.deepEqual(await response.json(), { status: "unavailable", checks: ["shutting_down"] });
  } finally {
    service.runtime.lifecycle.draining = false;
  }
});
