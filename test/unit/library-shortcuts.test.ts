// Each shortcut through a library's internals is taken only at the versions it was written for, and
// only while LIBRARY_SHORTCUTS allows it; a mismatch is one warning naming the shortcut and both versions.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import {
  decideLibraryShortcuts,
  installedVersion,
  LIBRARY_SHORTCUTS,
  NO_SHORTCUTS,
  type InstalledVersion,
  type LibraryShortcutName,
} from "../../src/config/library-shortcuts.ts";
import { loadConfig } from "../../src/config/load.ts";

const NAMES = Object.keys(LIBRARY_SHORTCUTS) as LibraryShortcutName[];

/** The warnings a decision logs. */
function recorder() {
  const lines: Array<{ fields: Record<string, unknown>; message: string }> = [];
  return { lines, warn: (fields: Record<string, unknown>, message: string) => void lines.push({ fields, message }) };
}

/** Every pinned package at the first version its shortcut names, but `changes`. */
function versions(changes: Record<string, string | undefined> = {}): InstalledVersion {
  return (name, loadedBy) => {
    const key = loadedBy ? `${loadedBy}>${name}` : name;
    if (key in changes) return changes[key];
    for (const shortcut of Object.values(LIBRARY_SHORTCUTS)) {
      for (const pin of shortcut.pins) if (pin.name === name && pin.loadedBy === loadedBy) return pin.versions[0];
    }
    return undefined;
  };
}

const manifestVersion = (folder: string) => (JSON.parse(readFileSync(path.join(folder, "package.json"), "utf8")) as { version: string }).version;

test("the installed libraries are the versions every shortcut was written for: all are taken, nothing is logged", () => {
  const warnings = recorder();
  const active = decideLibraryShortcuts(true, warnings);
  assert.deepEqual(warnings.lines, [], "upgraded a library? read its shortcut against the new version, run its test, then pin it");
  assert.deepEqual(active, Object.fromEntries(NAMES.map((name) => [name, true])));
});

test("versions are read from each package's own package.json, from the copy that is loaded", () => {
  for (const shortcut of Object.values(LIBRARY_SHORTCUTS)) {
    for (const pin of shortcut.pins) {
      const loadedBy = pin.loadedBy;
      // The copy next to the package that loads it, if it has one; else the root copy.
      const nested = loadedBy ? path.join("node_modules", loadedBy, "node_modules", pin.name) : undefined;
      const folder = nested && existsSync(nested) ? nested : path.join("node_modules", pin.name);
      assert.equal(installedVersion(pin.name, loadedBy), manifestVersion(folder), `${loadedBy ?? "agenthost"} loads ${pin.name}`);
    }
  }
  // @langchain/core does not export its package.json, and it brings its own langsmith.
  assert.equal(installedVersion("@langchain/core"), manifestVersion("node_modules/@langchain/core"));
  assert.equal(installedVersion("no-such-package-here"), undefined);
  assert.equal(installedVersion("express", "no-such-package-here"), undefined);
});

test("one package at another version: one warning naming the shortcut, the versions expected and installed; that shortcut alone is off", () => {
  const warnings = recorder();
  const active = decideLibraryShortcuts(true, warnings, versions({ express: "5.4.0" }));
  assert.deepEqual(active, { ...Object.fromEntries(NAMES.map((name) => [name, true])), expressPrototypes: false });
  assert.equal(warnings.lines.length, 1);
  const [line] = warnings.lines;
  assert.deepEqual(line!.fields, { shortcut: "expressPrototypes", expected: "express 5.3.0", installed: "express 5.4.0" });
  assert.equal(
    line!.message,
    "library shortcut expressPrototypes is off: written for express 5.3.0, installed express 5.4.0; the library's own path is taken: Node's own request and response objects, whose prototypes Express sets per request (same results, slower)",
  );
});

test("a shortcut relying on two packages names the one that moved, as its loader loads it; a missing package counts as moved", () => {
  const warnings = recorder();
  const active = decideLibraryShortcuts(true, warnings, versions({ "@langchain/core>langsmith": "0.13.0", "@langchain/langgraph-checkpoint-postgres": undefined }));
  assert.equal(active.untracedRunContext, false);
  assert.equal(active.postgresSaverWrites, false);
  assert.equal(active.incrementalMessagesReducer, true);
  assert.deepEqual(
    warnings.lines.map((l) => l.fields),
    [
      { shortcut: "untracedRunContext", expected: "@langchain/core's langsmith 0.12.0", installed: "@langchain/core's langsmith 0.13.0" },
      { shortcut: "postgresSaverWrites", expected: "@langchain/langgraph-checkpoint-postgres 1.0.5", installed: "@langchain/langgraph-checkpoint-postgres: not installed" },
    ],
  );
});

test("every package at another version: one warning per shortcut, each once, and every shortcut off", () => {
  const warnings = recorder();
  const active = decideLibraryShortcuts(true, warnings, () => "0.0.1");
  assert.deepEqual(active, NO_SHORTCUTS);
  assert.deepEqual(
    warnings.lines.map((l) => l.fields.shortcut),
    NAMES,
  );
});

test("LIBRARY_SHORTCUTS=false: every shortcut off, no version read, nothing logged; true by default", () => {
  const warnings = recorder();
  let reads = 0;
  const active = decideLibraryShortcuts(false, warnings, () => {
    reads++;
    return "0.0.1";
  });
  assert.deepEqual(active, NO_SHORTCUTS);
  assert.equal(reads, 0);
  assert.deepEqual(warnings.lines, []);
  assert.ok(Object.values(NO_SHORTCUTS).every((on) => on === false));

  const base = { AUTH_SECRET: "x", USE_FAKE_MODEL: "true" };
  assert.equal(loadConfig(base).LIBRARY_SHORTCUTS, true);
  assert.equal(loadConfig({ ...base, LIBRARY_SHORTCUTS: "false" }).LIBRARY_SHORTCUTS, false);
  assert.equal(loadConfig({ ...base, LIBRARY_SHORTCUTS: "0" }).LIBRARY_SHORTCUTS, false);
  assert.throws(() => loadConfig({ ...base, LIBRARY_SHORTCUTS: "off" }), /LIBRARY_SHORTCUTS/);
});
