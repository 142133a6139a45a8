#!/usr/bin/env node
// Fails when the modules under src/ import each other in a cycle (type-only imports included), or
// when a module imports one of a higher layer (docs/architecture.md, "Layers"). Reads each file's
// import and export specifiers with the TypeScript compiler's pre-processor; only relative
// specifiers name our own modules.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const root = resolve(process.argv[2] ?? "src");
/** The project's own src/: there every module must have a layer. */
const projectSources = root === fileURLToPath(new URL("../src", import.meta.url));

/**
 * The layers, highest first; a module may import its own layer and those below. A path ending in
 * `/` names a folder, any other a file; the longest that matches a module places it. Keep in step
 * with the table in docs/architecture.md.
 */
const LAYERS = [
  ["entry points", ["cluster/main.ts", "ui/main.ts", "maintenance/cli.ts"]],
  ["processes", ["cluster/", "worker/", "maintenance/", "ui/"]],
  ["composition root", ["runtime.ts"]],
  ["HTTP", ["http/"]],
  ["background runs", ["background/"]],
  ["platform", ["platform/"]],
  ["conversations", ["conversations/"]],
  ["runs", ["runs/"]],
  ["domain services", ["agents/", "models/", "checkpoints/", "feedback/", "auth/", "admission/", "coordination/"]],
  ["contract", ["contract/"]],
  ["foundations", ["config/", "errors/", "observability/", "client/"]],
];

function sources(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith(".d.ts") ? [path] : [];
  });
}

const imports = new Map();
for (const file of sources(root)) {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
  const local = importedFiles.map((i) => i.fileName).filter((name) => name.startsWith("."));
  imports.set(file, local.map((name) => resolve(dirname(file), name)).filter((path) => path !== file));
}

// Depth-first search; a module met again while still on the path closes a cycle.
const done = new Set();
const path = [];
const cycles = [];
function visit(file) {
  const at = path.indexOf(file);
  if (at >= 0) return void cycles.push([...path.slice(at), file]);
  if (done.has(file) || !imports.has(file)) return;
  path.push(file);
  for (const next of imports.get(file)) visit(next);
  path.pop();
  done.add(file);
}
for (const file of imports.keys()) visit(file);

/** The module's path under the root, with `/` separators. */
const name = (file) => relative(root, file).split(sep).join("/");

/** The layer's rank (0 is the highest) and name, or undefined for a module no layer names. */
function layerOf(module) {
  let best;
  LAYERS.forEach(([layer, paths], rank) => {
    for (const p of paths) {
      const matches = p.endsWith("/") ? module.startsWith(p) : module === p;
      if (matches && (!best || p.length > best.length)) best = { rank, layer, length: p.length };
    }
  });
  return best;
}

const unplaced = [];
const upward = [];
for (const [file, targets] of imports) {
  const from = name(file);
  const fromLayer = layerOf(from);
  if (!fromLayer) {
    if (projectSources) unplaced.push(from);
    continue;
  }
  for (const target of targets) {
    const to = name(target);
    const toLayer = layerOf(to);
    if (!toLayer || toLayer.rank >= fromLayer.rank) continue;
    upward.push(`${from} (${fromLayer.layer}) -> ${to} (${toLayer.layer})`);
  }
}

let failed = false;
if (cycles.length) {
  failed = true;
  console.error(`${cycles.length} import cycle(s) under ${relative(process.cwd(), root)}/:`);
  for (const cycle of cycles) console.error(`  ${cycle.map((f) => name(f)).join(" -> ")}`);
}
if (unplaced.length) {
  failed = true;
  console.error(`${unplaced.length} module(s) in no layer (add their folder to LAYERS in scripts/check-cycles.mjs):`);
  for (const module of unplaced) console.error(`  ${module}`);
}
if (upward.length) {
  failed = true;
  console.error(`${upward.length} import(s) up the layers (docs/architecture.md, "Layers"):`);
  for (const line of upward) console.error(`  ${line}`);
}
if (failed) process.exit(1);
console.log(`no import cycles and no imports up the layers among ${imports.size} modules under ${relative(process.cwd(), root)}/`);
