// The retention benchmark's parts (bench/retention-*.ts) on a tiny SQLite database: the fill copies
// the service's own rows for every table keyed by conversation, so a new table or column the copy
// does not handle fails here rather than in a 100,000-conversation run. The filled conversations
// read back through the history route and the Platform API, a turn continues one, and a sweep deletes
// the expired half whole and nothing else.
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { verifyAfterDrain, verifySample } from "../../bench/retention-checks.ts";
import { sqliteDatabase } from "../../bench/retention-db.ts";
import { DAY, fill, planCopies, TOKEN, TTL_DAYS } from "../../bench/retention-fill.ts";
import { startService, type RunningService } from "../helpers/service.ts";

const db = sqliteDatabase();
let service: RunningService | undefined;
after(async () => {
  await service?.close();
  await db.drop();
});

test("the benchmark's fill reads back through the service, and a sweep deletes exactly its expired half", async () => {
  const copies = planCopies(12);
  const filled = await fill(db, copies, () => {}, 10);
  assert.equal(filled.rowCounts.agenthost_threads, copies.length + 3, "every copy is listed, beside the two templates and the long conversation");
  assert.equal(filled.rowCounts.agenthost_platform_threads, copies.filter((c) => c.platform).length + 1);
  assert.equal(copies.filter((c) => c.old).length, copies.length / 2);

  service = await startService({
    ...db.env,
    AUTH_SECRET: TOKEN,
    LOG_LEVEL: "silent",
    CONVERSATION_TTL: String((TTL_DAYS * DAY) / 1000),
    RETENTION_SWEEP_INTERVAL: "3600",
    RETENTION_MAX_DELETIONS_PER_SECOND: "100000",
  });
  const port = Number(new URL(service.url).port);
  await verifySample(port, filled);
  await service.runtime.retention.sweep();
  const summary = await verifyAfterDrain(port, db, filled, true);
  assert.match(summary, /^0 expired conversations left/);
});
