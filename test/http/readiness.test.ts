// Readiness that only the service can flip: probes share one cached check and never count as
// database load, on the PostgreSQL backend whose pool saturation is part of readiness.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
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

test("200 concurrent readiness probes all answer 200 and cost one database check", async () => {
  const before = pings;
  const statuses = await Promise.all(Array.from({ length: 200 }, probe));
  assert.deepEqual([...new Set(statuses)], [200]);
  assert.ok(pings - before <= 2, `${pings - before} database checks for 200 probes`);
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
