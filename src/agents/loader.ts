import { existsSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { isAgent, unwrapGraph, type Agent } from "./agent.ts";
import { prepareToImport } from "./typescript-loader.ts";

const FORMAT = 'entries look like "<module or file>:<export name>", a file path starting with ./ or /, e.g. "./my-agents.ts:echo"';

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
    throw new Error(`AGENT_PATHS entry "${importString}": the module has no export named "${exportName}"`);
  }
  const value = namespace[exportName];
  if (isAgent(value)) return value;
  const graph = unwrapGraph(value);
  if (graph) {
    const name = typeof graph.name === "string" && graph.name && graph.name !== "LangGraph" ? graph.name : exportName;
    return { name, description: `Custom agent ${name}`, graph };
  }
  throw new Error(`AGENT_PATHS entry "${importString}": the export is neither an Agent nor a compiled graph`);
}
