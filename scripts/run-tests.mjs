#!/usr/bin/env node
// Runs the test suite with Node's own runner. Node 20 neither expands globs nor finds .ts files,
// so this lists them.
//
//   node scripts/run-tests.mjs [--unit] [--coverage | --no-coverage] [node --test flags] [path fragment ...]
//
// Path fragments narrow the run to files whose path contains any of them. Any other `--flag` (or
// `--flag=value`, or `--flag value` for the options Node documents as taking one) goes to
// `node --test`: `--test-name-pattern=lease` or `--test-name-pattern lease`, `--test-only`,
// `--inspect-brk`, `--test-concurrency=1` (which wins over TEST_CONCURRENCY). `--unit` keeps only the
// files that need no PostgreSQL, Redis or Chromium (UNIT below). Line coverage of src/ (Node's
// --experimental-test-coverage) is measured on the unit tests and printed after them, in `--unit`
// runs and in a whole run; `--coverage` measures any run, `--no-coverage` none. The per-line detail
// goes to test/artifacts/coverage/lcov.info.
//
// TEST_CONCURRENCY (default 3) test files run at once, and a whole run's unit part and the slowest
// files that sort last (SIDE) run one after the other on one more lane beside them (see the parts
// below); each part's output is printed whole, the unit part's first.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";

/**
 * Test files (path prefixes) that run on their own: pure functions, and real HTTP over loopback to
 * servers started in the test process with in-memory storage. No PostgreSQL, Redis, Chromium,
 * Python or cluster processes. (test/integration/sqlite-failures and maintenance-service need none
 * either, but take a third of this part's time: they stay with the rest.)
 */
const UNIT = ["test/unit/", "test/client/", "test/ui/chat-server.test.ts", "test/ui/config.test.ts"];
const LCOV = join("test", "artifacts", "coverage", "lcov.info");

/**
 * Test files that take long and sort last (Node starts the files it is given in alphabetical order):
 * in a whole run they ran on after the others had finished, server-package (it builds, packs and
 * installs from the registry: about a minute of CPU) for a minute alone at the end. They start at
 * once instead, on the lane beside the rest, before the unit part.
 */
const SIDE = ["test/packaging/", "test/ui/chat-page.test.ts"];

function find(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === "artifacts" || entry.name === "fixtures" ? [] : find(path);
    return entry.name.endsWith(".test.ts") ? [path] : [];
  });
}

/**
 * The options of this Node that need a value (`--test-name-pattern=...`, `-r, --require=...`), read
 * from `node --help`: written with the value as the next argument, that argument is the value, not a
 * path fragment. Options whose value is optional (`--inspect[=port]`) take it only after `=`.
 */
function optionsWithValue() {
  const help = spawnSync(process.execPath, ["--help"], { encoding: "utf8" }).stdout ?? "";
  const names = new Set();
  for (const line of help.split("\n")) {
    const column = /^ {2}(-\S.*?)(?: {2,}|$)/.exec(line)?.[1];
    if (!column) continue;
    const aliases = column.split(", ").map((alias) => /^(-{1,2}[A-Za-z0-9-]+)(\[?=)?/.exec(alias));
    if (!aliases.some((alias) => alias?.[2] === "=")) continue;
    for (const alias of aliases) if (alias) names.add(alias[1]);
  }
  return names;
}

const OWN = ["--unit", "--coverage", "--no-coverage"];
const flags = new Set();
/** Flags for `node --test` itself, passed through untouched: `--flag=value` or `--flag value`. */
const passThrough = [];
const filters = [];
{
  const args = process.argv.slice(2);
  const withValue = optionsWithValue();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (OWN.includes(arg)) flags.add(arg);
    else if (!arg.startsWith("-")) filters.push(arg);
    else if (!withValue.has(arg)) passThrough.push(arg);
    else if (i + 1 < args.length) passThrough.push(`${arg}=${args[++i]}`);
    else {
      console.error(`run-tests: ${arg} needs a value: ${arg}=<value> or ${arg} <value>`);
      process.exit(2);
    }
  }
}
const isUnit = (f) => UNIT.some((prefix) => f.startsWith(prefix));
const files = find("test")
  .map((f) => f.split("\\").join("/"))
  .filter((f) => !flags.has("--unit") || isUnit(f))
  .filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)))
  .sort();
if (files.length === 0) {
  console.error("no test files matched");
  process.exit(1);
}

// Coverage roughly doubles the time of the tests that start services and processes, so a whole run
// measures it on the unit part only: that part with coverage, beside the rest without.
const whole = filters.length === 0 && !flags.has("--unit");
const measure = !flags.has("--no-coverage") && (flags.has("--coverage") || flags.has("--unit") || whole);
const split = whole && measure && !flags.has("--coverage");
/** Files run at once: --test-concurrency among the flags wins over TEST_CONCURRENCY. */
const concurrencyFlag = passThrough.findLast((flag) => flag.startsWith("--test-concurrency="));
const concurrency = Number(concurrencyFlag?.slice("--test-concurrency=".length) ?? process.env.TEST_CONCURRENCY ?? 3);
if (!Number.isInteger(concurrency) || concurrency < 1) {
  console.error(`run-tests: ${concurrencyFlag ? concurrencyFlag : `TEST_CONCURRENCY=${process.env.TEST_CONCURRENCY}`} is not a whole number of at least 1`);
  process.exit(2);
}
/** When this run started, for each part's span. */
const RUN_START = performance.now();
/** Each file's hang bound (Node applies it per file too). */
const TIMEOUT_MS = 300_000;
/**
 * The SIDE files' bound: the server package's file builds, packs and installs from the registry,
 * which took more than 300 s on a machine kept busy (load average 11), though it passed in full.
 */
const SIDE_TIMEOUT_MS = 900_000;
const isSide = (f) => SIDE.some((prefix) => f.startsWith(prefix));
/**
 * The parts of this run, each one `node --test`, in the order their output is printed: a whole run's
 * unit part (with coverage), the SIDE files, the rest. With more than one file at a time the rest
 * runs on `concurrency` lanes from the start, and one more lane runs the SIDE files, then the unit
 * part: the slowest files start first, and the CPU stays busy while few files are left. With one
 * file at a time (--test-concurrency=1), one part after the other.
 */
const parts = [];
let unitPart;
let sidePart;
{
  let rest = files;
  if (split) {
    unitPart = { title: "unit tests, with coverage", files: rest.filter(isUnit), coverage: true };
    parts.push(unitPart);
    rest = rest.filter((f) => !isUnit(f));
  }
  // Coverage of the rest (--coverage) is one report of all of it: then no part of its own.
  const restMeasured = measure && !split;
  const side = restMeasured ? [] : rest.filter(isSide);
  if (side.length > 0 && side.length < rest.length) {
    sidePart = { title: "packaging and browser tests", files: side, coverage: false, timeoutMs: SIDE_TIMEOUT_MS };
    parts.push(sidePart);
    rest = rest.filter((f) => !isSide(f));
  }
  parts.push({ title: split ? "the rest of the suite" : "the rest of these tests", files: rest, coverage: restMeasured });
}
/** Each part's run, once it has started: the rest at once, the lane beside it one part after another. */
const launched = new Map();
if (concurrency > 1) {
  const rest = parts.at(-1);
  launched.set(rest, Promise.resolve(run(rest.files, rest.coverage, concurrency)));
  let lane = Promise.resolve();
  for (const part of [sidePart, unitPart].filter(Boolean)) {
    const started = lane.then(() => run(part.files, part.coverage, 1, part.timeoutMs));
    launched.set(part, started);
    lane = started.then((handle) => handle.finished);
  }
}
let status = 0;
/** Each failed test's TAP lines (its `not ok` line and its YAML block), from every part. */
const failures = [];
for (const part of parts) {
  if (parts.length > 1) console.log(`# ${part.title}: ${part.files.length} test files`);
  const handle = await (launched.get(part) ?? run(part.files, part.coverage, concurrency, part.timeoutMs));
  status = Math.max(status, await handle.print());
  // Where the suite's time goes: each part's span, seconds from the start of this run.
  if (parts.length > 1) console.log(`# ${part.title}: ran from ${handle.span.start.toFixed(0)} s to ${handle.span.end.toFixed(0)} s of this run`);
  if (part.coverage) printCoverage(split || flags.has("--unit") ? "the unit tests" : "these tests");
  failures.push(...handle.failures());
}
// The failed tests again, last: a CI log cut to its end still says what failed and why.
if (failures.length > 0) {
  console.log(`# failed: ${failures.length} test(s)`);
  for (const failure of failures) console.log(failure.map((line) => `#   ${line}`).join("\n"));
}
process.exit(status);

/**
 * Starts one `node --test` over `files`. Its output is kept until `print()`, which writes it and what
 * follows, and resolves with the exit status once the run has ended and its output is written.
 */
function run(files, coverage, concurrency, timeoutMs = TIMEOUT_MS) {
  // The timeout catches a hang, it is no speed target: Node applies it to each file too, and the
  // files that start bin/agenthost a dozen times (startup refusals, supervision) passed in full yet
  // ran past 120 s on a machine kept busy (load average 10).
  // --test-force-exit: a file whose tests and hooks have all finished ends, even when a handle would
  // keep its process up. test/cluster/database-outage.test.ts passed every test and then waited out
  // the whole timeout, twice on Node 20, for a handle not found; the file's verdict is its tests'.
  // (Its exit handlers still run: the cluster helper's ends any lingering workers.)
  const nodeArgs = ["--import", "tsx", "--test", "--test-force-exit", `--test-concurrency=${concurrency}`, `--test-timeout=${timeoutMs}`];
  // The output goes through a pipe, so the reporter is named: spec on a terminal, TAP off one (Node
  // 20 picks by the pipe, Node 23 and later pick spec everywhere) unless the flags name one.
  const ownReporter = coverage || !passThrough.some((flag) => flag.startsWith("--test-reporter"));
  if (ownReporter) nodeArgs.push(`--test-reporter=${process.stdout.isTTY ? "spec" : "tap"}`, "--test-reporter-destination=stdout");
  if (coverage) {
    mkdirSync(join("test", "artifacts", "coverage"), { recursive: true });
    nodeArgs.push("--experimental-test-coverage", "--test-reporter=lcov", `--test-reporter-destination=${LCOV}`);
  }
  // --test-concurrency among the flags has been read into `concurrency` (see above).
  const flagsForNode = passThrough.filter((flag) => !flag.startsWith("--test-concurrency="));
  const child = spawn(process.execPath, [...nodeArgs, ...flagsForNode, ...files], {
    stdio: ["inherit", "pipe", "inherit"],
    // The service refuses to start without the LangChain setting bin/agenthost exports (src/config/langchain-environment.ts).
    env: { ...process.env, LANGCHAIN_CALLBACKS_BACKGROUND: "false", ...(ownReporter && process.stdout.isTTY ? { FORCE_COLOR: "1" } : {}) },
  });
  const closed = new Promise((resolve) => child.on("close", (code, signal) => resolve(code ?? (signal ? 1 : 0))));
  /** Lines not printed yet; undefined once printing. */
  let held = [];
  /** Every line, printed or not, for its failures. */
  const seen = [];
  let inTable = false;
  const lines = createInterface({ input: child.stdout });
  const ended = new Promise((resolve) => lines.once("close", resolve));
  lines.on("line", (line) => {
    // The runner's own coverage table lists every file it loaded, tests and fixtures included: leave
    // it out and print the figure for src/ from the lcov file instead.
    if (coverage && /start of coverage report/.test(line)) inTable = true;
    if (!inTable) {
      seen.push(line);
      if (held) held.push(line);
      else process.stdout.write(`${line}\n`);
    }
    if (coverage && /end of coverage report/.test(line)) inTable = false;
  });
  const span = { start: (performance.now() - RUN_START) / 1000, end: 0 };
  const finished = Promise.all([ended, closed]).then(([, code]) => {
    span.end = (performance.now() - RUN_START) / 1000;
    return code;
  });
  return {
    /** When it started and ended, seconds from the start of this run (the end once finished). */
    span,
    /** Resolves with the exit status once the run has ended and all its output has been read. */
    finished,
    print: async () => {
      process.stdout.write(held.map((line) => `${line}\n`).join(""));
      held = undefined;
      return finished;
    },
    /** Its failed tests so far: a suite failing only for its subtests is left out (they are listed). */
    failures: () => failedTests(seen),
  };
}

/**
 * The failed tests in TAP output: each one's `not ok` line and its YAML block, at most 150 lines,
 * without the stack (its location says where) or the expected and actual values (the error's diff
 * shows them).
 */
function failedTests(lines) {
  const failed = [];
  /** The names of the subtests the line is in, by depth (four spaces each). */
  const within = [];
  for (let i = 0; i < lines.length; i++) {
    const subtest = /^(\s*)# Subtest: (.*)$/.exec(lines[i]);
    if (subtest) within.splice(subtest[1].length / 4, Infinity, subtest[2]);
    const notOk = /^(\s*)not ok \d+ - (.*)$/.exec(lines[i]);
    // A failing `todo` test fails no run.
    if (!notOk || / # TODO\b/.test(notOk[2])) continue;
    // Its block ends at `...` two spaces in from it (an assertion's diff may hold a `...` line of its own).
    const end = `${notOk[1]}  ...`;
    const block = [`not ok - ${[...within.slice(0, notOk[1].length / 4), notOk[2]].join(" > ")}`];
    let skipIndent = -1;
    while (++i < lines.length && lines[i] !== end) {
      const indent = lines[i].search(/\S/);
      if (skipIndent >= 0 && indent > skipIndent) continue;
      skipIndent = /^\s*(stack|expected|actual):/.test(lines[i]) ? indent : -1;
      if (skipIndent < 0) block.push(lines[i]);
    }
    if (!block.some((line) => /failureType: 'subtestsFailed'/.test(line))) failed.push(block.slice(0, 150));
  }
  return failed;
}

/**
 * A file with declarations only (every top-level statement a type, an interface or a type import):
 * it compiles to nothing, so no test can load it.
 */
function typesOnly(file) {
  if (file.endsWith(".d.ts")) return true;
  const statements = readFileSync(file, "utf8").split("\n").filter((line) => /^[a-z]/.test(line));
  return statements.every((line) => /^(export\s+)?(declare\s+)?(type|interface)\b|^import\s+type\b/.test(line));
}

/** Line coverage of src/ from the lcov file: every .ts file under src/ with code, loaded by the tests or not. */
function printCoverage(by) {
  let text;
  try {
    text = readFileSync(LCOV, "utf8");
  } catch {
    console.log("# coverage: no lcov report was written");
    return;
  }
  const measured = new Map();
  for (const record of text.split("end_of_record")) {
    const file = /^SF:(.*)$/m.exec(record)?.[1]?.split("\\").join("/");
    const found = Number(/^LF:(\d+)$/m.exec(record)?.[1]);
    const hit = Number(/^LH:(\d+)$/m.exec(record)?.[1]);
    if (file?.startsWith("src/") && Number.isFinite(found) && Number.isFinite(hit)) measured.set(file, { found, hit });
  }
  const sources = (function walk(dir) {
    return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name).split("\\").join("/")] : [],
    );
  })("src").filter((file) => measured.has(file) || !typesOnly(file));
  const byFolder = new Map();
  const total = { found: 0, hit: 0 };
  const unloaded = [];
  for (const file of sources.sort()) {
    let lines = measured.get(file);
    if (!lines) {
      unloaded.push(file);
      lines = { found: readFileSync(file, "utf8").split(/(?<=\n)/).length, hit: 0 };
    }
    const folder = file.split("/").length > 2 ? file.split("/")[1] : "(top)";
    const sum = byFolder.get(folder) ?? { found: 0, hit: 0 };
    sum.found += lines.found;
    sum.hit += lines.hit;
    byFolder.set(folder, sum);
    total.found += lines.found;
    total.hit += lines.hit;
  }
  const pct = ({ found, hit }) => (found === 0 ? "100.0" : ((100 * hit) / found).toFixed(1));
  console.log(`# line coverage of src/ by ${by}: ${pct(total)}% (${total.hit} of ${total.found} lines in ${sources.length} files; declaration-only files left out)`);
  console.log(`#   by folder: ${[...byFolder].map(([folder, sum]) => `${folder} ${pct(sum)}%`).join(", ")}`);
  if (unloaded.length > 0) console.log(`#   never loaded (counted as 0%): ${unloaded.join(", ")}`);
  console.log(`#   per line: ${LCOV}`);
}
