import { createRequire } from "node:module";
import type BetterSqlite3 from "better-sqlite3";

/**
 * The SQLite driver: better-sqlite3 13 (a Node-API addon) on Node 22 and later, better-sqlite3 12
 * on Node 20. Node 24.19 and later abort the process (`RemoveEnvironmentCleanupHook`, `(env) !=
 * nullptr`) when a better-sqlite3 12 statement is garbage-collected outside a JavaScript context,
 * which a busy worker meets within seconds; 13 no longer uses the API that aborts, but it does not
 * load on Node 20. Both have the same API, so everything that opens a SQLite file takes this one.
 * `better-sqlite3-napi` is an optional dependency that npm leaves out on Node 20 (its engines);
 * where it is missing or does not load, 12 is the driver.
 */
const require = createRequire(import.meta.url);

function chosenDriver(): typeof BetterSqlite3 {
  if (Number(process.versions.node.split(".")[0]) >= 22) {
    try {
      return require("better-sqlite3-napi") as typeof BetterSqlite3;
    } catch {
      // Not installed (npm ran on an older Node, or with --omit=optional): the Node 20 driver.
    }
  }
  return require("better-sqlite3") as typeof BetterSqlite3;
}

const Database: typeof BetterSqlite3 = chosenDriver();
export default Database;
