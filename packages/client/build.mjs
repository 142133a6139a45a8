#!/usr/bin/env node
// Build @agenthost/client from ../../src/client (the sources stay in the service's tree): ES modules
// in dist/esm and CommonJS in dist/cjs, each with declarations and source maps.
import { spawnSync } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
rmSync(path.join(here, "dist"), { recursive: true, force: true });
for (const config of ["tsconfig.json", "tsconfig.cjs.json"]) {
  const result = spawnSync(process.execPath, [tsc, "-p", path.join(here, config)], { stdio: "inherit" });
  if (result.status !== 0) process.exit(result.status ?? 1);
}
// dist/cjs holds CommonJS inside a "type": "module" package: say so to Node and to TypeScript.
writeFileSync(path.join(here, "dist/cjs/package.json"), `${JSON.stringify({ type: "commonjs" })}\n`);
