import { test } from "node:test";
import assert from "node:assert/strict";
import { parseArgs } from "../../src/maintenance/args.ts";
import { MaintenanceRefusal } from "../../src/maintenance/refusal.ts";

const NOW = new Date("2025-06-01T00:00:00Z");
const FILE = ["--backend", "filedb", "--filedb-path", "db.sqlite"];

function refused(argv: string[], reason: RegExp) {
  assert.throws(
    () => parseArgs(argv, NOW),
    (error: unknown) => error instanceof MaintenanceRefusal && error.exitCode === 2 && reason.test(error.message) && !error.message.includes("\n"),
  );
}

test("a migration dry run is the default; --apply=true executes; --apply=false is a dry run", () => {
  const dry = parseArgs([...FILE, "--manifest", "m.json"], NOW);
  assert.deepEqual(dry, {
    help: false,
    target: { backend: "filedb", path: "db.sqlite" },
    operation: { kind: "migrate", manifestPath: "m.json" },
    apply: false,
  });
  const equals = parseArgs([...FILE, "--manifest", "m.json", "--apply=true"], NOW);
  assert.ok(!equals.help && equals.apply);
  const applied = parseArgs([...FILE, "--manifest=m.json", "--apply", "true"], NOW);
  assert.ok(!applied.help && applied.apply);
  const explicitDry = parseArgs([...FILE, "--manifest", "m.json", "--apply=false"], NOW);
  assert.ok(!explicitDry.help && !explicitDry.apply);
});

test("serverdb defaults to DATABASE_URL and schema public", () => {
  const args = parseArgs(["--backend=serverdb", "--before", "2025-01-01T00:00:00+02:00"], NOW);
  assert.ok(!args.help);
  assert.deepEqual(args.target, { backend: "serverdb", envName: "DATABASE_URL", schema: "public" });
  assert.deepEqual(args.operation, { kind: "retention", before: "2025-01-01T00:00:00+02:00", cutoff: 1735682400000000000n });
});

test("--help wins over everything else", () => {
  assert.deepEqual(parseArgs(["--apply=maybe", "--help"], NOW), { help: true });
  assert.deepEqual(parseArgs(["-h"], NOW), { help: true });
});

test("--apply with any value but true or false, or without a value, is an error", () => {
  refused([...FILE, "--manifest", "m.json", "--apply=maybe"], /--apply must be true or false/);
  refused([...FILE, "--manifest", "m.json", "--apply=TRUE"], /--apply must be true or false/);
  refused([...FILE, "--manifest", "m.json", "--apply=1"], /--apply must be true or false/);
  refused([...FILE, "--manifest", "m.json", "--apply="], /--apply must be true or false/);
  refused([...FILE, "--manifest", "m.json", "--apply"], /--apply needs a value/);
  refused([...FILE, "--apply", "--manifest", "m.json"], /--apply needs a value/);
});

test("exactly one of --manifest and --before", () => {
  refused([...FILE, "--manifest", "m.json", "--before", "2025-01-01T00:00:00Z"], /not both/);
  refused([...FILE], /give one of --manifest FILE \(migration\) or --before ISO8601 \(retention\)/);
});

test("--before needs a timezone, a real date, and a past instant", () => {
  refused([...FILE, "--before", "2025-01-01T00:00:00"], /--before must be an ISO 8601 date and time with a timezone/);
  refused([...FILE, "--before", "2025-01-01"], /with a timezone/);
  refused([...FILE, "--before", "2025-02-30T00:00:00Z"], /with a timezone/);
  refused([...FILE, "--before", "yesterday"], /with a timezone/);
  refused([...FILE, "--before", "2025-07-01T00:00:00Z"], /--before is in the future/);
});

test("backend flags must match the backend; the backend is required", () => {
  refused(["--manifest", "m.json"], /--backend is required/);
  refused(["--backend", "sqlite", "--manifest", "m.json"], /--backend must be filedb or serverdb/);
  refused(["--backend", "filedb", "--manifest", "m.json"], /--backend filedb requires --filedb-path/);
  refused([...FILE, "--schema", "x", "--manifest", "m.json"], /--schema applies only to --backend serverdb/);
  refused([...FILE, "--serverdb-env", "X", "--manifest", "m.json"], /--serverdb-env applies only to --backend serverdb/);
  refused(["--backend", "serverdb", "--filedb-path", "x", "--manifest", "m.json"], /--filedb-path applies only to --backend filedb/);
  refused(["--backend", "serverdb", "--schema", "bad-name;drop", "--manifest", "m.json"], /--schema must be a plain SQL identifier/);
});

test("unknown flags, positionals and repeats are errors, and values are never echoed", () => {
  refused([...FILE, "--manifest", "m.json", "--password=hunter2"], /unknown flag --password/);
  refused([...FILE, "--manifest", "m.json", "stray"], /unexpected argument #7/);
  refused([...FILE, "--manifest", "m.json", "--manifest", "n.json"], /--manifest is given more than once/);
  for (const argv of [
    [...FILE, "--manifest", "m.json", "--password=hunter2"],
    [...FILE, "--manifest", "m.json", "hunter2"],
    ["--backend", "serverdb", "--serverdb-env", "postgres://u:hunter2@db/x", "--manifest", "m.json"],
  ]) {
    assert.throws(() => parseArgs(argv, NOW), (error: Error) => !error.message.includes("hunter2"));
  }
});

test("every problem is reported at once, on one line", () => {
  refused(["--apply=maybe", "--schema", "x"], /--backend is required; --apply must be true or false.*give one of --manifest/);
});
