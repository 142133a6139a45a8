import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type BetterSqlite3 from "better-sqlite3";
import Database from "../checkpoints/sqlite-driver.ts";
import { MaintenanceRefusal } from "./refusal.ts";

/** A SQLite file opened to be read by a library saver, and how to let it go. */
export interface SqliteReading {
  readonly db: BetterSqlite3.Database;
  /** The tables the file has. */
  readonly tables: ReadonlySet<string>;
  close(): void;
}

/**
 * Open a SQLite file for reading through LangGraph's SqliteSaver without changing it. The saver's
 * setup switches the file to WAL mode, which a read-only connection cannot do unless the file is
 * in WAL mode already (every file the savers wrote is): a file in another mode is read from a
 * private copy (SQLite's online backup), deleted on close. `required` tables must exist.
 */
export async function openSqliteForReading(path: string, required: readonly string[], what: string): Promise<SqliteReading> {
  if (!existsSync(path)) throw new MaintenanceRefusal(`file ${JSON.stringify(path)} does not exist`);
  let db: BetterSqlite3.Database;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
  } catch (error) {
    throw new MaintenanceRefusal(`cannot open file ${JSON.stringify(path)}: ${(error as Error).message}`);
  }
  let copy: string | undefined;
  try {
    const tables = new Set(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[]);
    const missing = required.filter((t) => !tables.has(t));
    if (missing.length) {
      throw new MaintenanceRefusal(`file ${JSON.stringify(path)} has no ${missing.join(", ")} table${missing.length > 1 ? "s" : ""} (${what})`);
    }
    if (db.pragma("journal_mode", { simple: true }) !== "wal") {
      copy = join(mkdtempSync(join(tmpdir(), "agenthost-maintenance-")), "copy.sqlite");
      await db.backup(copy);
      db.close();
      db = new Database(copy, { fileMustExist: true });
    }
    const open = db;
    const folder = copy && dirname(copy);
    return {
      db: open,
      tables,
      close() {
        open.close();
        if (folder) rmSync(folder, { recursive: true, force: true });
      },
    };
  } catch (error) {
    db.close();
    if (copy) rmSync(dirname(copy), { recursive: true, force: true });
    if (error instanceof MaintenanceRefusal) throw error;
    throw new MaintenanceRefusal(`cannot read file ${JSON.stringify(path)}: ${(error as Error).message}`);
  }
}
