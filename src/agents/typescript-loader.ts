/** File names Node cannot import without a TypeScript loader. */
const TYPESCRIPT_FILE = /\.(?:[cm]?ts|tsx)$/;

/** The service itself runs as TypeScript (development, tests): tsx's loader is already active. */
const RUNS_AS_TYPESCRIPT = import.meta.url.endsWith(".ts");

let registered = false;

/**
 * Before importing an AGENT_PATHS file: when it is TypeScript and the service runs compiled, register
 * tsx's loader in this process (once), so `./my-agents.ts` works in production too. Nothing is
 * loaded for JavaScript agents.
 */
export async function prepareToImport(fileUrl: string): Promise<void> {
  if (registered || RUNS_AS_TYPESCRIPT || !TYPESCRIPT_FILE.test(new URL(fileUrl).pathname)) return;
  const { register } = await import("tsx/esm/api");
  register();
  registered = true;
}
