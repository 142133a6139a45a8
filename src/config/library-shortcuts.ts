import { existsSync, readFileSync, realpathSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

/**
 * The places where agenthost relies on a library's internals to go faster than the library's own
 * code, each declared with the exact versions of the packages it was written and tested against.
 * A shortcut is taken only when LIBRARY_SHORTCUTS allows it and every package it relies on is
 * installed at one of those versions; otherwise the service takes the library's own path, which
 * gives the same results more slowly (a test holds each pair to that). The decision is made once,
 * at startup, by the worker's composition root; the request path only reads a boolean it was given.
 *
 * After upgrading one of these packages: read the shortcut's code against the new version, run its
 * test (named below), then add the version here. Until then the shortcut stays off, with one
 * warning at startup. docs/architecture.md, "Library shortcuts", says what each does and gains.
 */

/** A package a shortcut relies on and the versions it was written for. */
export interface LibraryPin {
  readonly name: string;
  readonly versions: readonly string[];
  /**
   * The package whose copy counts, when the package may be installed more than once (langsmith is:
   * the root copy and @langchain/core's own).
   */
  readonly loadedBy?: string;
}

export interface LibraryShortcut {
  /** What it takes over, in a few words (the startup warning's). */
  readonly takesOver: string;
  /** What runs instead when it is off. */
  readonly libraryPath: string;
  readonly pins: readonly LibraryPin[];
}

const shortcuts = {
  /** src/observability/untraced-run-context.ts; test/unit/untraced-run-context.test.ts. */
  untracedRunContext: {
    takesOver: "LangChain's AsyncLocalStorageProviderSingleton.runWithConfig (process-wide)",
    libraryPath: "LangChain's own runWithConfig",
    pins: [
      { name: "@langchain/core", versions: ["1.4.0"] },
      { name: "langsmith", versions: ["0.12.0"], loadedBy: "@langchain/core" },
    ],
  },
  /** src/agents/service-graph.ts and incremental-messages.ts; test/unit/incremental-messages.test.ts. */
  incrementalMessagesReducer: {
    takesOver: "the messages channel of each agent's service graph (LangGraph's BinaryOperatorAggregate internals)",
    libraryPath: "LangGraph's messagesStateReducer",
    pins: [{ name: "@langchain/langgraph", versions: ["1.7.3"] }],
  },
  /** src/http/server.ts (appMessages); test/http/app-prototypes.test.ts. */
  expressPrototypes: {
    takesOver: "Express's app.request and app.response prototypes",
    libraryPath: "Node's own request and response objects, whose prototypes Express sets per request",
    pins: [{ name: "express", versions: ["5.3.0"] }],
  },
  /** src/checkpoints/sqlite-saver.ts; test/integration/sqlite-saver.test.ts. */
  sqliteSaverWrites: {
    takesOver: "SqliteSaver's put and putWrites (its tables written with agenthost's own statements)",
    libraryPath: "LangGraph's SqliteSaver, a checkpoint's message rows and list entry written beside it",
    pins: [{ name: "@langchain/langgraph-checkpoint-sqlite", versions: ["1.0.4"] }],
  },
  /** src/checkpoints/pg-saver.ts; test/integration/pg-saver.int.test.ts. */
  postgresSaverWrites: {
    takesOver: "PostgresSaver's put and putWrites (its tables written with agenthost's own statements, its _dump* methods)",
    libraryPath: "LangGraph's PostgresSaver, a checkpoint's message rows and list entry written beside it",
    pins: [{ name: "@langchain/langgraph-checkpoint-postgres", versions: ["1.0.5"] }],
  },
} as const satisfies Record<string, LibraryShortcut>;

export type LibraryShortcutName = keyof typeof shortcuts;

/** Every shortcut, by name. */
export const LIBRARY_SHORTCUTS: { readonly [K in LibraryShortcutName]: LibraryShortcut } = shortcuts;

/** Which shortcuts this process takes, decided once at startup. */
export type ActiveShortcuts = { readonly [K in LibraryShortcutName]: boolean };

/** Every shortcut off: the libraries' own paths (LIBRARY_SHORTCUTS=false, and the default of callers given no decision). */
export const NO_SHORTCUTS: ActiveShortcuts = Object.freeze({
  untracedRunContext: false,
  incrementalMessagesReducer: false,
  expressPrototypes: false,
  sqliteSaverWrites: false,
  postgresSaverWrites: false,
});

/** The installed version of a package (as `loadedBy` loads it), or undefined when it is not installed. */
export type InstalledVersion = (name: string, loadedBy?: string) => string | undefined;

/** Where a logger writes the startup warnings (a pino logger is one). */
export interface ShortcutWarnings {
  warn(fields: Record<string, unknown>, message: string): void;
}

/**
 * The folder of package `name` as seen from `require`'s folder: the first `node_modules/<name>`
 * up the tree, as Node finds a bare import. Its package.json is read from disk, since a package's
 * `exports` need not expose it.
 */
function packageFolder(name: string, require: NodeJS.Require): string | undefined {
  for (const folder of require.resolve.paths(name) ?? []) {
    const manifest = path.join(folder, name, "package.json");
    if (existsSync(manifest)) return path.dirname(manifest);
  }
  return undefined;
}

function versionIn(folder: string): string | undefined {
  try {
    const { version } = JSON.parse(readFileSync(path.join(folder, "package.json"), "utf8")) as { version?: unknown };
    return typeof version === "string" ? version : undefined;
  } catch {
    return undefined;
  }
}

/** The version of the copy of `name` that agenthost (or `loadedBy`, when given) imports. */
export const installedVersion: InstalledVersion = (name, loadedBy) => {
  let from = createRequire(import.meta.url);
  if (loadedBy !== undefined) {
    const owner = packageFolder(loadedBy, from);
    if (owner === undefined) return undefined;
    // From its real folder, as Node resolves its imports (a linked package looks beside its target).
    from = createRequire(path.join(realpathSync(owner), "package.json"));
  }
  const folder = packageFolder(name, from);
  return folder === undefined ? undefined : versionIn(folder);
};

/** "express 5.3.0", "@langchain/core's langsmith 0.12.0", "express: not installed" */
function describe(pin: LibraryPin, version: string | undefined): string {
  const name = pin.loadedBy ? `${pin.loadedBy}'s ${pin.name}` : pin.name;
  return version === undefined ? `${name}: not installed` : `${name} ${version}`;
}

/**
 * Decide which shortcuts this process takes: none when `enabled` (LIBRARY_SHORTCUTS) is false;
 * otherwise each one whose packages are all installed at a version it was written for. Each
 * shortcut left off for a version logs one warning naming it, the versions it was written for and
 * the ones installed, and the path taken instead.
 */
export function decideLibraryShortcuts(enabled: boolean, warnings: ShortcutWarnings, installed: InstalledVersion = installedVersion): ActiveShortcuts {
  if (!enabled) return NO_SHORTCUTS;
  const active: Record<string, boolean> = {};
  for (const [name, shortcut] of Object.entries(LIBRARY_SHORTCUTS) as Array<[LibraryShortcutName, LibraryShortcut]>) {
    const mismatched = shortcut.pins.flatMap((pin) => {
      const version = installed(pin.name, pin.loadedBy);
      return version !== undefined && pin.versions.includes(version) ? [] : [{ pin, version }];
    });
    active[name] = mismatched.length === 0;
    if (active[name]) continue;
    const expected = mismatched.map(({ pin }) => describe(pin, pin.versions.join(" or "))).join(" and ");
    const found = mismatched.map(({ pin, version }) => describe(pin, version)).join(" and ");
    warnings.warn(
      { shortcut: name, expected, installed: found },
      `library shortcut ${name} is off: written for ${expected}, installed ${found}; the library's own path is taken: ${shortcut.libraryPath} (same results, slower)`,
    );
  }
  return Object.freeze(active as ActiveShortcuts);
}
