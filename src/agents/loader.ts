import path from "node:path";
import { pathToFileURL } from "node:url";
import { isAgent, unwrapGraph, type Agent } from "./agent.ts";
import { prepareToImport } from "./typescript-loader.ts";

/**
 * Resolve one AGENT_PATHS entry, `<module specifier or file path>:<export name>`, from the working
 * directory. Relative and absolute paths are files; anything else is a package specifier.
 * The export must be an Agent or a compiled graph (named by the graph's `name`).
 */
export async function loadAgentFromImportString(importString: string, cwd = process.cwd()): Promise<Agent> {
  const separator = importString.lastIndexOf(":");
  if (separator <= 0 || separator === importString.length - 1) {
    throw new Error(`AGENT_PATHS entry "${importString}" must look like <module or file>:<export name>`);
  }
  const specifier = importString.slice(0, separator);
  const exportName = importString.slice(separator + 1);
  const isFile = specifier.startsWith(".") || path.isAbsolute(specifier);
  const target = isFile ? pathToFileURL(path.resolve(cwd, specifier)).href : specifier;

  let namespace: Record<string, unknown>;
  try {
    if (isFile) await prepareToImport(target);
    namespace = (await import(target)) as Record<string, unknown>;
  } catch (error) {
    const reason = error instanceof Error ? error.message.split("\n")[0] : String(error);
    throw new Error(`AGENT_PATHS entry "${importString}" does not resolve: ${reason}`, { cause: error });
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
