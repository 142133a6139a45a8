#!/usr/bin/env node
// Fails when the modules under src/ import each other in a cycle (type-only imports included:
// layers only look down). Reads each file's import and export specifiers with the TypeScript
// compiler's pre-processor; only relative specifiers name our own modules.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";

const root = resolve(process.argv[2] ?? "src");

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

if (cycles.length) {
  console.error(`${cycles.length} import cycle(s) under ${relative(process.cwd(), root)}/:`);
  for (const cycle of cycles) console.error(`  ${cycle.map((f) => relative(root, f)).join(" -> ")}`);
  process.exit(1);
}
console.log(`no import cycles among ${imports.size} modules under ${relative(process.cwd(), root)}/`);
