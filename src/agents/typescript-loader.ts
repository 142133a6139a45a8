// How an AGENT_PATHS file written in TypeScript gets imported by the compiled service: by Node itself
// when it strips types (on by default from Node 22.18 and 23.6), else through tsx when it is
// installed (an optional peer dependency), else not at all: startup is refused with one line
// naming the fix. tsx is never a dependency of the service.
import path from "node:path";
import type * as TsxApi from "tsx/esm/api";

/** File names Node cannot import without a TypeScript loader. */
const TYPESCRIPT_FILE = /\.(?:[cm]?ts|tsx)$/;

/** The ones Node's own type stripping takes (it does not transform JSX). */
const STRIPPABLE_FILE = /\.[cm]?ts$/;

/** The service itself runs as TypeScript (development, tests): tsx's loader is already active. */
const RUNS_AS_TYPESCRIPT = import.meta.url.endsWith(".ts");

/** An AGENT_PATHS TypeScript file that nothing in this process can load; the message is one line naming the fix. */
export class TypeScriptAgentRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TypeScriptAgentRefusal";
  }
}

/** Whether this Node strips TypeScript types by itself (`process.features.typescript`: "strip" or "transform"). */
export function nodeStripsTypes(): boolean {
  const features = process.features as { readonly typescript?: unknown };
  return typeof features.typescript === "string";
}

/** The absolute path of the file an AGENT_PATHS entry names, when it names one (`./x.ts:echo`, `/srv/x.js:echo`). */
export function agentFileOf(importString: string, cwd: string): string | undefined {
  const specifier = importString.slice(0, Math.max(0, importString.lastIndexOf(":")));
  return specifier.startsWith(".") || path.isAbsolute(specifier) ? path.resolve(cwd, specifier) : undefined;
}

/**
 * What loading `file` takes: nothing (not TypeScript, the service runs through tsx, or Node strips
 * its types), or tsx's API (imported, not yet registered). Throws TypeScriptAgentRefusal when tsx
 * is needed and does not load.
 */
async function loaderFor(importString: string, file: string): Promise<typeof TsxApi | undefined> {
  if (!TYPESCRIPT_FILE.test(file) || RUNS_AS_TYPESCRIPT) return undefined;
  const strippable = STRIPPABLE_FILE.test(file);
  if (strippable && nodeStripsTypes()) return undefined;
  try {
    return await import("tsx/esm/api");
  } catch (error) {
    const code = (error as { code?: unknown } | undefined)?.code;
    const tsx = code === "ERR_MODULE_NOT_FOUND" ? "tsx is not installed" : `tsx did not load (${String((error as Error).message).split("\n")[0]})`;
    const node = strippable ? `Node ${process.version} does not strip types (22.18+ and 23.6+ do)` : "Node does not strip types from .tsx files";
    throw new TypeScriptAgentRefusal(
      `AGENT_PATHS entry "${importString}" is a TypeScript file and nothing here can load it: ${node} and ${tsx}; ` +
        `install tsx next to agenthost (npm install tsx)${strippable ? ", run Node 22.18 or later," : ""} or point the entry at a compiled .js file`,
    );
  }
}

/**
 * Throws TypeScriptAgentRefusal for the first AGENT_PATHS entry that is a TypeScript file nothing
 * can load. The primary calls it before forking any worker; it registers nothing.
 */
export async function checkTypeScriptAgents(importStrings: readonly string[], cwd = process.cwd()): Promise<void> {
  for (const importString of importStrings) {
    const file = agentFileOf(importString, cwd);
    if (file !== undefined) await loaderFor(importString, file);
  }
}

let tsxRegistered = false;

/**
 * Before importing the AGENT_PATHS file `file`: when it is TypeScript that this Node cannot load
 * by itself, register tsx's loader in this process (once). Nothing is loaded for JavaScript agents.
 * Throws TypeScriptAgentRefusal when tsx is needed and not installed.
 */
export async function prepareToImport(importString: string, file: string): Promise<void> {
  if (tsxRegistered) return;
  const tsx = await loaderFor(importString, file);
  if (!tsx) return;
  tsx.register();
  tsxRegistered = true;
}
