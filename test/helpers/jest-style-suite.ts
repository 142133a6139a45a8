import { format } from "node:util";
import { after, afterEach, before, beforeEach, describe, it } from "node:test";
import { expect } from "vitest";

/**
 * Runs test definitions written against Jest-style globals (`describe`, `it`, `beforeAll`,
 * `describe.each`, `it.skip`, `expect`, ...) under node:test, so a suite a library ships for Jest
 * or Vitest becomes part of this project's own test run, counted by its runner: LangGraph's
 * checkpoint-saver validation suite (@langchain/langgraph-checkpoint-validation) is one.
 *
 * Only what such suites use is mapped, each to its node:test counterpart with the same nesting
 * and hook order (a suite's `beforeEach` runs before a nested suite's). `expect` is Vitest's own,
 * the one the suites are written for (Vitest is the validation package's dependency, so it is
 * there whenever that package is): its equality rules are the suite's, not an imitation of them.
 * Outside Vitest's runner a soft assertion cannot be collected, so `expect.soft` (replaced on
 * Vitest's `expect` for the rest of the process) fails at once, as a plain `expect`: a test passes
 * or fails as it would under Vitest, it only stops sooner.
 */

type Body = (...args: never[]) => unknown;
type Hook = (fn: () => unknown, timeout?: number) => void;

/** A table row: its arguments to the test body, and the values its name is formatted with. */
function rowArguments(row: unknown): unknown[] {
  // As Jest does: a table of primitives is a table of one-argument rows.
  return Array.isArray(row) ? row : [row];
}

/** A test or suite name from an `.each` table: `$key` from an object row, else printf-style (`%s`). */
function rowName(template: string, row: unknown, index: number): string {
  if (typeof row === "object" && row !== null && !Array.isArray(row) && template.includes("$")) {
    return template.replace(/\$([A-Za-z_][\w.]*)/g, (whole, key: string) => {
      const value = key.split(".").reduce<unknown>((at, part) => (at as Record<string, unknown> | undefined)?.[part], row);
      return value === undefined ? whole : typeof value === "string" ? value : format("%o", value);
    });
  }
  const args = rowArguments(row);
  const placeholders = template.match(/%[sdifjoOp#]/g)?.length ?? 0;
  return format(template.replace(/%p/g, "%o").replace(/%#/g, String(index)), ...args.slice(0, placeholders));
}

/** `it`/`describe` with a Jest-style timeout as the last argument, and `.each` over a table. */
function withEach(define: (name: string, body: () => unknown, timeout?: number) => void) {
  return Object.assign(define, {
    each:
      (table: readonly unknown[]) =>
      (template: string, body: Body, timeout?: number): void => {
        table.forEach((row, index) => {
          const args = rowArguments(row) as never[];
          define(rowName(template, row, index), () => body(...args), timeout);
        });
      },
  });
}

const jestIt = withEach((name, body, timeout) => {
  // node:test passes a test context as the first argument: a Jest-style body takes none.
  void it(name, { timeout }, async () => {
    await body();
  });
});
/** A skipped test: reported as skipped, its body never run. */
const jestSkip = (name: string) => {
  void it.skip(name);
};
const jestDescribe = withEach((name, body) => {
  void describe(name, () => {
    body();
  });
});

const hook =
  (register: typeof before): Hook =>
  (fn, timeout) =>
    register(
      async () => {
        await fn();
      },
      { timeout },
    );

/**
 * Install the Jest-style globals. Call it once, before importing or calling the suite's definitions;
 * they stay installed for the test file's process (its tests call `expect` as they run).
 */
export function installJestStyleGlobals(): void {
  const softExpect = (value: unknown, message?: string) => expect(value, message);
  Object.assign(globalThis, {
    describe: jestDescribe,
    it: Object.assign(jestIt, { skip: jestSkip }),
    test: Object.assign(jestIt, { skip: jestSkip }),
    beforeAll: hook(before),
    afterAll: hook(after),
    beforeEach: hook(beforeEach),
    afterEach: hook(afterEach),
    expect: Object.assign(expect, { soft: softExpect }),
  });
}
