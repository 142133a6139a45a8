#!/usr/bin/env node
// The registry this project installs from lacks some platform-specific optional packages (e.g.
// @msgpackr-extract/msgpackr-extract-darwin-arm64). npm then leaves them out of package-lock.json but
// still lists them under their parent's optionalDependencies, and `npm ci` refuses the lockfile.
// This drops such dangling optional names from the lockfile. Run it after changing dependencies:
//   node scripts/prune-lockfile-optionals.mjs
import { readFileSync, writeFileSync } from "node:fs";

const file = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(file, "utf8"));
const pruned = [];
for (const [path, entry] of Object.entries(lock.packages)) {
  for (const name of Object.keys(entry.optionalDependencies ?? {})) {
    const nested = `${path}/node_modules/${name}`;
    if (!(nested in lock.packages) && !(`node_modules/${name}` in lock.packages)) {
      delete entry.optionalDependencies[name];
      pruned.push(`${path || "(root)"} → ${name}`);
    }
  }
}
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(pruned.length ? `pruned:\n  ${pruned.join("\n  ")}` : "nothing to prune");
