import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after } from "node:test";
import { pino } from "pino";
import { openCheckpointBackend, type CheckpointBackend } from "../../src/checkpoints/backend.ts";
import { TimedSaver } from "../../src/checkpoints/timed-saver.ts";
import { decideLibraryShortcuts } from "../../src/config/library-shortcuts.ts";
import { loadConfig } from "../../src/config/load.ts";
import { DATABASE_URL, dropSchema, uniqueSchema, withClient } from "../helpers/postgres.ts";
import { installJestStyleGlobals } from "../helpers/jest-style-suite.ts";

/**
 * LangGraph's checkpoint-saver validation suite (@langchain/langgraph-checkpoint-validation, 718
 * cases per saver) against the saver of each backend exactly as a worker builds it: the Config of
 * loadConfig, the library shortcuts decided as src/runtime.ts decides them, openCheckpointBackend,
 * and the TimedSaver the runtime puts around it. The suite is written for Vitest's globals; it runs
 * here under node:test (test/helpers/jest-style-suite.ts), so its cases count in this run.
 *
 * Each checkpointer the suite asks for is a backend of its own: memory fresh each time; the SQLite
 * file a new file; PostgreSQL one schema for the run, emptied when the suite is done with each
 * checkpointer (the suite's isolation rule: no checkpointer may read another's data).
 */

installJestStyleGlobals();
// Imported after the globals exist: the suite's definitions call them.
const { specTest } = await import("@langchain/langgraph-checkpoint-validation");

const logger = pino({ level: "silent" });
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agenthost-saver-validation-"));
const schema = uniqueSchema("validation");
after(async () => {
  fs.rmSync(dir, { recursive: true, force: true });
  await dropSchema(schema);
});

/** Metrics go nowhere: the timing wrapper is here because the service's savers have it. */
const noTimer = { labels: () => ({ observe: () => {} }) };

let files = 0;
const env: Record<string, () => Record<string, string>> = {
  memory: () => ({}),
  filedb: () => ({ FILEDB_DB_PATH: path.join(dir, `validation-${++files}.sqlite`) }),
  serverdb: () => ({ DATABASE_URL, SERVERDB_SCHEMA: schema }),
};

/** Every table of the run's PostgreSQL schema emptied (the saver's migration record kept). */
async function emptySchema(): Promise<void> {
  await withClient(async (client) => {
    const { rows } = await client.query<{ tablename: string }>("SELECT tablename FROM pg_tables WHERE schemaname = $1 AND tablename <> 'checkpoint_migrations'", [schema]);
    if (rows.length) await client.query(`TRUNCATE ${rows.map(({ tablename }) => `"${schema}"."${tablename}"`).join(", ")}`);
  });
}

for (const kind of ["memory", "filedb", "serverdb"] as const) {
  const backends = new WeakMap<TimedSaver, CheckpointBackend>();
  specTest<TimedSaver>({
    checkpointerName: `agenthost ${kind}`,
    async createCheckpointer() {
      const config = loadConfig({ AUTH_SECRET: "x", USE_FAKE_MODEL: "true", MEMORY_BACKEND: kind, ...env[kind]!() });
      const shortcuts = decideLibraryShortcuts(config.LIBRARY_SHORTCUTS, logger);
      const backend = await openCheckpointBackend(config, { logger, shortcuts });
      const saver = new TimedSaver(backend.saver, backend.kind, noTimer);
      backends.set(saver, backend);
      return saver;
    },
    async destroyCheckpointer(saver) {
      await backends.get(saver)?.close();
      if (kind === "serverdb") await emptySchema();
    },
  });
}
