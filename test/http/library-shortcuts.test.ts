// The service with its library shortcuts, with them off (LIBRARY_SHORTCUTS=false) and with libraries
// faked to other versions than the shortcuts were written for: the same answers and conversations;
// a mismatch is one warning line per shortcut, and the library's own path is taken.
// Untraced run context is installed once per process, so the runs without it come first.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { AsyncLocalStorageProviderSingleton } from "@langchain/core/singletons";
import { messagesStateReducer, type BinaryOperatorAggregate } from "@langchain/langgraph";
import { LIBRARY_SHORTCUTS, NO_SHORTCUTS, type LibraryShortcutName } from "../../src/config/library-shortcuts.ts";
import { uninstallUntracedRunContext } from "../../src/observability/untraced-run-context.ts";
import { call, startService, type RunningService } from "../helpers/service.ts";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agenthost-shortcuts-"));
after(() => {
  uninstallUntracedRunContext();
  fs.rmSync(dir, { recursive: true, force: true });
});

const WARN = 40;
const NAMES = Object.keys(LIBRARY_SHORTCUTS) as LibraryShortcutName[];

/** Whether LangChain's singleton runs its own runWithConfig (the short one is set on the object itself). */
const langChainsOwnRunContext = () => !Object.hasOwn(AsyncLocalStorageProviderSingleton, "runWithConfig");

function messagesOperator(service: RunningService): unknown {
  const graph = service.runtime.registry.get("chatbot-agent")!.graph;
  return (graph.channels.messages as BinaryOperatorAggregate<unknown, unknown>).operator;
}

/** Two turns and the history on a SQLite file of the service's own; what a client sees, without ids and times. */
async function conversation(name: string, env: Record<string, string | undefined>, overrides = {}) {
  const service = await startService({ MEMORY_BACKEND: "filedb", FILEDB_DB_PATH: path.join(dir, `${name}.sqlite`), ...env }, overrides);
  try {
    const answers = [];
    for (const message of ["Hello", "And again"]) {
      const answer = await call(service, "POST", "/invoke", { input: { message }, thread_id: "same" });
      assert.equal(answer.status, 200);
      const { content, type, tool_calls } = (await answer.json()) as Record<string, unknown>;
      answers.push({ content, type, tool_calls });
    }
    const page = await call(service, "GET", "/history?thread_id=same");
    const { messages, total } = (await page.json()) as { messages: Array<Record<string, unknown>>; total: number };
    const seen = { answers, total, history: messages.map((m) => [m.type, m.content]) };
    return { service, seen };
  } finally {
    await service.close();
  }
}

const shortcutWarnings = (service: RunningService) => service.logs.filter((l) => l.shortcut !== undefined);

let libraryPaths: unknown;

test("libraries at other versions than the shortcuts were written for: one warning per shortcut, and every library's own path", async () => {
  const { service, seen } = await conversation("mismatch", {}, { installedVersion: () => "0.0.1-faked" });
  assert.deepEqual(service.runtime.shortcuts, NO_SHORTCUTS);
  const warnings = shortcutWarnings(service);
  assert.deepEqual(warnings.map((l) => [l.level, l.shortcut]), NAMES.map((name) => [WARN, name]), "one line each");
  const express = warnings.find((l) => l.shortcut === "expressPrototypes")!;
  assert.equal(express.expected, "express 5.3.0");
  assert.equal(express.installed, "express 0.0.1-faked");
  assert.match(String(express.msg), /^library shortcut expressPrototypes is off: written for express 5\.3\.0, installed express 0\.0\.1-faked; the library's own path is taken/);
  assert.ok(langChainsOwnRunContext(), "LangChain's runWithConfig is left as it is");
  assert.equal(messagesOperator(service), messagesStateReducer, "LangGraph's messages reducer");
  assert.equal(seen.total, 4);
  libraryPaths = seen;
});

test("LIBRARY_SHORTCUTS=false: every library's own path, nothing logged, the same conversation", async () => {
  const { service, seen } = await conversation("off", { LIBRARY_SHORTCUTS: "false" });
  assert.deepEqual(service.runtime.shortcuts, NO_SHORTCUTS);
  assert.deepEqual(shortcutWarnings(service), []);
  assert.ok(langChainsOwnRunContext());
  assert.equal(messagesOperator(service), messagesStateReducer);
  assert.deepEqual(seen, libraryPaths);
});

test("by default, with the libraries at their pinned versions, every shortcut is taken: the same conversation", async () => {
  const { service, seen } = await conversation("on", {});
  assert.deepEqual(service.runtime.shortcuts, Object.fromEntries(NAMES.map((name) => [name, true])));
  assert.deepEqual(shortcutWarnings(service), []);
  assert.ok(!langChainsOwnRunContext(), "the short run context is installed");
  assert.notEqual(messagesOperator(service), messagesStateReducer, "the incremental reducer");
  assert.deepEqual(seen, libraryPaths);
});
