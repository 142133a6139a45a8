/**
 * A fresh place for a benchmark's service (and the library's floor beside it) on each backend:
 * nothing for memory, a new directory for SQLite files, new schemas in BENCH_DATABASE_URL (default
 * the test database on this machine) for PostgreSQL; `cleanup` removes them.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pgQuery } from "./postgres.ts";

export const databaseUrl = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

export interface Backend {
  /** The service's settings for it. */
  readonly env: Record<string, string>;
  /** Where the floor keeps its checkpoints: a file, or a URL and schema. */
  readonly floorTarget: string;
  cleanup(): Promise<void>;
}

/** Places opened by this process so far: two opened in the same millisecond differ. */
let opened = 0;

export async function openBackend(kind: string): Promise<Backend> {
  if (kind === "memory") return { env: { MEMORY_BACKEND: "memory" }, floorTarget: "", cleanup: async () => {} };
  const id = `${process.pid}_${Date.now()}_${++opened}`;
  if (kind === "filedb") {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agenthost-bench-"));
    return {
      env: { MEMORY_BACKEND: "filedb", FILEDB_DB_PATH: path.join(dir, "service.sqlite") },
      floorTarget: path.join(dir, "floor.sqlite"),
      cleanup: async () => fs.rmSync(dir, { recursive: true, force: true }),
    };
  }
  if (kind !== "serverdb") throw new Error(`unknown backend ${kind} (memory, filedb, serverdb)`);
  return {
    env: { MEMORY_BACKEND: "serverdb", DATABASE_URL: databaseUrl, SERVERDB_SCHEMA: `bench_service_${id}` },
    floorTarget: `${databaseUrl}#bench_floor_${id}`,
    cleanup: async () => {
      await pgQuery(databaseUrl, `DROP SCHEMA IF EXISTS "bench_service_${id}" CASCADE`);
      await pgQuery(databaseUrl, `DROP SCHEMA IF EXISTS "bench_floor_${id}" CASCADE`);
    },
  };
}
