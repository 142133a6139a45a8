import fs from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type BetterSqlite3 from "better-sqlite3";
import Database from "./sqlite-driver.ts";

/** Pause between attempts to switch a fresh file to WAL, jittered so openers stop colliding. */
const WAL_RETRY_MIN_MS = 5;
const WAL_RETRY_JITTER_MS = 45;
/**
 * Pages the WAL may hold before a commit copies them back into the database file (SQLite's
 * default is 1,000, about 4 MB). A run commits five times, each writing the same few hot pages
 * (the tables' and indexes' last pages) again; a checkpoint copies each page once and syncs the
 * file. Every 10,000 pages (about 40 MB of WAL) a commit cost 91 µs instead of 114 µs on this
 * machine, checkpoints included (docs/performance.md).
 */
export const WAL_AUTOCHECKPOINT_PAGES = 10_000;

function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" && (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED"));
}

/**
 * Open the SQLite file several workers share, ready for concurrent use:
 *
 * 1. the busy timeout is in force before the first statement (better-sqlite3 sets it at open), so
 *    every lock this connection waits for is waited for, not refused;
 * 2. the file is switched to WAL. On a fresh file every opener races for the exclusive lock that
 *    switch needs, and SQLite refuses one of two openers that would deadlock at once, without
 *    waiting; so a refused switch is tried again after a short random pause until `busyTimeoutMs`
 *    has passed;
 * 3. `schema` runs in one BEGIN IMMEDIATE transaction: the write lock is taken (waiting) before
 *    anything is read, so concurrent openers queue instead of deadlocking on CREATE TABLE.
 *
 * Throws the driver's error (the connection closed) if the file cannot be made ready.
 */
export async function openSqliteFile(file: string, busyTimeoutMs: number, schema: (db: BetterSqlite3.Database) => void): Promise<BetterSqlite3.Database> {
  fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const db = new Database(file, { timeout: busyTimeoutMs });
  try {
    const deadline = performance.now() + busyTimeoutMs;
    for (;;) {
      try {
        if (db.pragma("journal_mode", { simple: true }) === "wal" || db.pragma("journal_mode = WAL", { simple: true }) === "wal") break;
        throw new Database.SqliteError("the file could not be switched to WAL mode", "SQLITE_CANTOPEN");
      } catch (error) {
        if (!isBusy(error) || performance.now() >= deadline) throw error;
      }
      await sleep(WAL_RETRY_MIN_MS + Math.random() * WAL_RETRY_JITTER_MS);
    }
    // WAL with NORMAL sync is durable across a process crash; a power loss may drop the last commits.
    db.pragma("synchronous = NORMAL");
    db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
    db.transaction(() => schema(db)).immediate();
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}
