import { _CONTEXT_VARIABLES_KEY as CONTEXT_VARIABLES_KEY, AsyncLocalStorageProviderSingleton } from "@langchain/core/singletons";

/**
 * LangChain keeps the config of the runnable being run in AsyncLocalStorage, where
 * `getConfig()`, `interrupt()`, nested runnables and context variables find it. Every runnable a
 * graph step enters (the node, its channel writes, its edges) goes through
 * `AsyncLocalStorageProviderSingleton.runWithConfig`, and unless a LangChain tracer with a parent run
 * is among the callbacks, that builds a new LangSmith RunTree with tracing turned off only to carry
 * the config: it reads LangSmith's settings from the environment, makes a UUIDv7 and two time
 * strings and defines some forty properties (15 µs each here). With no tracer, that was a tenth of
 * the service's CPU per run (docs/performance.md).
 *
 * Installed, runWithConfig carries the config, when no tracer can take part, in an object that
 * inherits from one such RunTree, built by LangChain's own runWithConfig at installation, and owns
 * a fresh copy of each of its arrays and objects (what a run may change: its `extra` with the
 * config, its `child_runs`). It is a RunTree to everything that looks (LangSmith's `isRunTree`,
 * `getCurrentRunTree()`, `traceable`, `setContextVariable`), with tracing off, as LangChain's own
 * would be. A runnable that asks for no root run (LangChain's stream iterators) gets what LangChain
 * gives it without a tracer: a context holding only the context variables. A tracer can take part,
 * and LangChain's own method runs, when the config's callbacks hold one
 * (OBSERVABILITY_BACKEND=langsmith, or one an agent adds), when the runnable runs inside a LangSmith
 * run with tracing on, or when LangChain's tracing variables are set in the environment
 * (`tracingFromEnvironment`; LangChain would then add a tracer itself).
 *
 * This replaces a method of a process-wide singleton, once per process: every LangChain run in the
 * process takes the short path, and sees no difference but its cost. It relies on LangChain's and
 * LangSmith's internals (the RunTree's fields, the `lc:child_config` key, the tracer's name): the
 * untracedRunContext shortcut (src/config/library-shortcuts.ts), which the runtime installs only
 * at the versions it was written for and while LIBRARY_SHORTCUTS allows it.
 */
export interface UntracedRunContextOptions {
  /** Whether LangChain's tracing variables (LANGSMITH_TRACING and its older names) are "true". */
  readonly tracingFromEnvironment: boolean;
}

type RunWithConfig = (config: unknown, callback: () => unknown, avoidCreatingRootRunTree?: boolean) => unknown;

/** Where LangChain puts a runnable's config in its RunTree's `extra` (not exported by LangChain). */
const CHILD_CONFIG_KEY = Symbol.for("lc:child_config");
const TRACER_NAME = "langchain_tracer";

const provider = AsyncLocalStorageProviderSingleton as unknown as { runWithConfig: RunWithConfig; getInstance(): { getStore(): unknown; run(store: unknown, callback: () => unknown): unknown } };
let installed: RunWithConfig | undefined;

interface Handler {
  readonly name?: unknown;
}

function tracerAmong(callbacks: unknown): boolean {
  const handlers: unknown = Array.isArray(callbacks) ? callbacks : (callbacks as { handlers?: unknown } | undefined)?.handlers;
  return Array.isArray(handlers) && handlers.some((handler: Handler | undefined) => handler?.name === TRACER_NAME);
}

function isContainer(value: unknown): value is object {
  return value !== null && typeof value === "object" && (Array.isArray(value) || Object.getPrototypeOf(value) === Object.prototype);
}

/** A RunTree's fields that are arrays or plain objects, but its LangSmith client (one per process in LangChain's too). */
function containerFields(template: Record<string, unknown>): string[] {
  return Object.keys(template).filter((key) => key !== "client" && isContainer(template[key]));
}

/** A copy of an array or plain object, and (`depth` levels down) of the arrays and plain objects it holds (`extra.metadata`). */
function freshCopy(value: object, depth = 1): object {
  const copy: Record<string | symbol, unknown> = Array.isArray(value) ? ([...value] as never) : { ...value };
  if (depth > 0) for (const key of Reflect.ownKeys(copy)) if (isContainer(copy[key])) copy[key] = freshCopy(copy[key], depth - 1);
  return copy;
}

export function installUntracedRunContext(options: UntracedRunContextOptions): void {
  if (installed) return;
  const original = provider.runWithConfig;
  const storage = () => provider.getInstance();
  // LangChain's own root RunTree for an empty config, never entered by a run: the template.
  const template = original.call(provider, {}, () => storage().getStore()) as Record<string, unknown> | undefined;
  if (template === undefined || typeof template !== "object") return; // no AsyncLocalStorage in this process: nothing to carry
  const containers = containerFields(template);

  installed = function runWithConfig(this: unknown, config, callback, avoidCreatingRootRunTree) {
    if (tracerAmong((config as { callbacks?: unknown } | undefined)?.callbacks)) return original.call(this, config, callback, avoidCreatingRootRunTree);
    const store = storage();
    const previous = store.getStore() as Record<string | symbol, unknown> | undefined;
    const tracing = (previous?.tracingEnabled as boolean | undefined) ?? options.tracingFromEnvironment;
    if (tracing) return original.call(this, config, callback, avoidCreatingRootRunTree);
    const contextVariables = previous?.[CONTEXT_VARIABLES_KEY];
    // Asked for no root run (LangChain's stream iterators): the context holds only the context variables.
    if (avoidCreatingRootRunTree) return store.run(contextVariables === undefined ? undefined : { [CONTEXT_VARIABLES_KEY]: contextVariables }, callback);
    const carrier = Object.create(template) as Record<string | symbol, unknown>;
    for (const key of containers) carrier[key] = freshCopy(template[key] as object);
    (carrier.extra as Record<symbol, unknown>)[CHILD_CONFIG_KEY] = config;
    if (contextVariables !== undefined) carrier[CONTEXT_VARIABLES_KEY] = contextVariables;
    return store.run(carrier, callback);
  };
  provider.runWithConfig = installed;
}

/** Puts LangChain's own runWithConfig back (tests). */
export function uninstallUntracedRunContext(): void {
  if (!installed) return;
  delete (provider as Partial<typeof provider>).runWithConfig;
  installed = undefined;
}
