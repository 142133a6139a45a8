import { existsSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { isAgent, unwrapGraph, type Agent } from "./agent.ts";
import { prepareToImport } from "./typescript-loader.ts";

const FORMAT = 'entries look like "<module or file>:<export name>", a file path starting with ./ or /, e.g. "./my-agents.ts:echo"';

/** How many export names a refusal lists in each of its lists at most. */
const LISTED_EXPORTS = 20;

/** Whether an export could be an entry's: an Agent, or a compiled graph (or what wraps one). */
function looksLikeAgent(namespace: Record<string, unknown>, name: string): boolean {
  try {
    const value = namespace[name];
    return isAgent(value) || unwrapGraph(value) !== undefined;
  } catch {
    // A binding not yet initialised (an import cycle) throws when read.
    return false;
  }
}

/** Edits (insert, delete, replace one character) that turn `a` into `b`. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

function listed(names: readonly string[]): string {
  const shown = names.slice(0, LISTED_EXPORTS).join(", ");
  return names.length > LISTED_EXPORTS ? `${shown} and ${names.length - LISTED_EXPORTS} more` : shown;
}

/** What a module exports, for a refusal line: those that are agents or compiled graphs, then the others (each list bounded). */
function exportsOf(namespace: Record<string, unknown>): string {
  const names = Object.keys(namespace);
  if (!names.length) return "the module exports nothing";
  const agents = names.filter((name) => looksLikeAgent(namespace, name));
  const others = names.filter((name) => !agents.includes(name));
  if (!agents.length) return `it exports no Agent or compiled graph; its exports: ${listed(others)}`;
  return others.length ? `its agents and graphs: ${listed(agents)}; its other exports: ${listed(others)}` : `its agents and graphs: ${listed(agents)}`;
}

/** The export `wanted` was likely meant to be: the closest name (agents first) within a typo's reach. */
function closestExport(namespace: Record<string, unknown>, wanted: string): string | undefined {
  const names = Object.keys(namespace);
  const agents = names.filter((name) => looksLikeAgent(namespace, name));
  let best: { name: string; distance: number } | undefined;
  for (const name of agents.length ? agents : names) {
    const distance = editDistance(wanted.toLowerCase(), name.toLowerCase());
    if (!best || distance < best.distance) best = { name, distance };
  }
  return best && best.distance <= Math.max(2, Math.floor(wanted.length / 3)) ? best.name : undefined;
}

/** Why an entry did not import, in words that name the fix: a missing ./, a missing file, or the import's own first line. */
function unresolvedReason(specifier: string, isFile: boolean, cwd: string, error: unknown): string {
  const file = path.resolve(cwd, specifier);
  if (!isFile && existsSync(file)) {
    return `"${specifier}" is read as a package name; ${specifier} is a file here, so write "./${specifier}"`;
  }
  if (isFile && !existsSync(file)) return `there is no file ${file} (paths resolve from ${cwd})`;
  const first = error instanceof Error ? error.message.split("\n")[0] : String(error);
  if (isFile) return `importing ${file} failed: ${first}`;
  const notFound = (error as { code?: unknown } | undefined)?.code === "ERR_MODULE_NOT_FOUND";
  return notFound ? `no package "${specifier}" is installed, and no file of that name is in ${cwd} (${FORMAT})` : `importing "${specifier}" failed: ${first}`;
}

/**
 * Resolve one AGENT_PATHS entry, `<module specifier or file path>:<export name>`, from the working
 * directory. Relative and absolute paths are files; anything else is a package specifier.
 * The export must be an Agent or a compiled graph (named by the graph's `name`).
 */
export async function loadAgentFromImportString(importString: string, cwd = process.cwd()): Promise<Agent> {
  const separator = importString.lastIndexOf(":");
  if (separator <= 0 || separator === importString.length - 1) {
    throw new Error(`AGENT_PATHS entry "${importString}" names no export: ${FORMAT}`);
  }
  const specifier = importString.slice(0, separator);
  const exportName = importString.slice(separator + 1);
  const isFile = specifier.startsWith(".") || path.isAbsolute(specifier);
  const target = isFile ? pathToFileURL(path.resolve(cwd, specifier)).href : specifier;

  // A TypeScript file nothing can load is refused with its own line, not as a failed import.
  if (isFile) await prepareToImport(importString, path.resolve(cwd, specifier));
  let namespace: Record<string, unknown>;
  try {
    namespace = (await import(target)) as Record<string, unknown>;
  } catch (error) {
    throw new Error(`AGENT_PATHS entry "${importString}" does not resolve: ${unresolvedReason(specifier, isFile, cwd, error)}`, { cause: error });
  }
  if (!(exportName in namespace)) {
    const closest = closestExport(namespace, exportName);
    const guess = closest === undefined ? "" : ` (did you mean "${closest}"?)`;
    throw new Error(`AGENT_PATHS entry "${importString}": the module has no export named "${exportName}"${guess}; ${exportsOf(namespace)}`);
  }
  const value = namespace[exportName];
  if (isAgent(value)) return value;
  const graph = unwrapGraph(value);
  if (graph) {
    const name = typeof graph.name === "string" && graph.name && graph.name !== "LangGraph" ? graph.name : exportName;
    return { name, description: `Custom agent ${name}`, graph };
  }
  throw new Error(`AGENT_PATHS entry "${importString}": the export is neither an Agent nor a compiled graph; ${exportsOf(namespace)}`);
}
