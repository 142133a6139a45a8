// The reliability run of issue 11's database and worker failures, at full size: 60 s PostgreSQL
// outages (refused, then dropped packets) under load, 8 worker kills under load, 20 starts of four
// workers on a fresh SQLite file on a busy machine, and a dead worker's Redis leases. The same
// tests run smaller in `npm test`; each prints its figures.
//
//   node --import tsx --test --test-timeout=0 test/reliability/database-and-workers.reliability.ts
process.env.AGENTHOST_TEST_OUTAGE_MS ??= "60000";
process.env.AGENTHOST_TEST_KILLS ??= "8";
process.env.AGENTHOST_TEST_SQLITE_STARTS ??= "20";

await import("../cluster/database-outage.test.ts");
await import("../cluster/worker-kill.test.ts");
await import("../cluster/sqlite-fresh-start.test.ts");
await import("../cluster/redis-lease-reaping.test.ts");
