import { fileURLToPath } from "node:url";

/**
 * Whether this process runs the compiled JavaScript (dist/) or the TypeScript sources through tsx:
 * this module's own file name says which.
 */
export const RUNS_COMPILED = import.meta.url.endsWith(".js");

/** The HTTP worker's entry module, in the same form as this one. */
export const WORKER_ENTRY = fileURLToPath(new URL(`../../workers/http.${RUNS_COMPILED ? "js" : "ts"}`, import.meta.url));

/**
 * Node flags for the workers: the primary's own, plus, when the workers are TypeScript, tsx's loader
 * named by its absolute URL (a bare `tsx` would resolve from the working directory).
 */
export function workerExecArgv(execArgv: readonly string[] = process.execArgv): string[] {
  const argv = [...execArgv];
  if (RUNS_COMPILED) return argv;
  const hasTsx = argv.some((arg, i) => arg.includes("tsx") && (argv[i - 1] === "--import" || arg.startsWith("--import")));
  return hasTsx ? argv : ["--import", import.meta.resolve("tsx"), ...argv];
}
