import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

let version: string | undefined;

/**
 * agenthost's version, from the package.json above this module (src/ in a checkout, dist/src/ when
 * installed), read once; "unknown" if none names the package.
 */
export function serviceVersion(): string {
  if (version !== undefined) return version;
  version = "unknown";
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let depth = 0; depth < 5; depth++) {
    const file = path.join(dir, "package.json");
    if (fs.existsSync(file)) {
      const json = JSON.parse(fs.readFileSync(file, "utf8")) as { name?: unknown; version?: unknown };
      if (json.name === "agenthost" && typeof json.version === "string") {
        version = json.version;
        break;
      }
    }
    dir = path.dirname(dir);
  }
  return version;
}
