import { test } from "node:test";
import assert from "node:assert/strict";
import { parseArgs } from "../../src/maintenance/args.ts";
import { MaintenanceRefusal } from "../../src/maintenance/refusal.ts";

const FILE = ["--backend", "filedb", "--filedb-path", "db.sqlite"];
const SERVER = ["--backend", "serverdb", "--schema", "agents"];

function refused(argv: string[], reason: RegExp) {
  assert.throws(
    () => parseArgs(argv),
    (error: unknown) => error instanceof MaintenanceRefusal && error.exitCode === 2 && reason.test(error.message) && !error.message.includes("\n"),
  );
}

test("export: a dry run by default, to a new file or a new schema, with optional selection and owners file", () => {
  assert.deepEqual(parseArgs(["export", ...FILE, "--to", "out.sqlite"]), {
    help: false,
    target: { backend: "filedb", path: "db.sqlite" },
    operation: { kind: "export", to: { kind: "sqlite", path: "out.sqlite" }, selection: {} },
    apply: false,
  });
  const full = parseArgs(["export", ...SERVER, "--to-schema=langgraph", "--user", "alice", "--agent", "chatbot-agent", "--thread", "lat:v1:x", "--owners", "o.json", "--apply=true"]);
  assert.ok(!full.help);
  assert.deepEqual(full.operation, {
    kind: "export",
    to: { kind: "postgres", envName: "DATABASE_URL", schema: "langgraph" },
    selection: { threadId: "lat:v1:x", userId: "alice", agentId: "chatbot-agent" },
    ownersPath: "o.json",
  });
  assert.equal(full.apply, true);
  // The other database's connection string: its own variable, else the service's.
  const elsewhere = parseArgs(["export", ...SERVER, "--serverdb-env", "SERVICE_DB", "--to-schema", "x"]);
  assert.ok(!elsewhere.help);
  assert.deepEqual(elsewhere.operation.kind === "export" && elsewhere.operation.to, { kind: "postgres", envName: "SERVICE_DB", schema: "x" });
  const fromFile = parseArgs(["export", ...FILE, "--to-schema", "x", "--to-serverdb-env", "EXPORT_DB"]);
  assert.ok(!fromFile.help);
  assert.deepEqual(fromFile.operation.kind === "export" && fromFile.operation.to, { kind: "postgres", envName: "EXPORT_DB", schema: "x" });
});

test("import: from a file or a schema, an optional manifest, and what to do with a destination that exists", () => {
  const args = parseArgs(["import", ...FILE, "--from", "langgraph.sqlite", "--manifest", "m.json"]);
  assert.ok(!args.help);
  assert.deepEqual(args.operation, { kind: "import", from: { kind: "sqlite", path: "langgraph.sqlite" }, manifestPath: "m.json", existing: "refuse" });
  const skip = parseArgs(["import", ...SERVER, "--from-schema", "toolkit", "--existing", "skip"]);
  assert.ok(!skip.help);
  assert.deepEqual(skip.operation, { kind: "import", from: { kind: "postgres", envName: "DATABASE_URL", schema: "toolkit" }, existing: "skip" });
});

test("export and import: exactly one target or source, flags of their own command only, the command word first", () => {
  refused(["export", ...FILE], /give one of --to PATH \(a new SQLite file\) or --to-schema NAME \(a new PostgreSQL schema\)/);
  refused(["export", ...FILE, "--to", "a", "--to-schema", "b"], /give either --to or --to-schema, not both/);
  refused(["import", ...FILE], /give one of --from PATH \(a SQLite file\) or --from-schema NAME/);
  refused(["export", ...FILE, "--to", "a", "--to-serverdb-env", "X"], /--to-serverdb-env applies only to --to-schema/);
  refused(["export", ...FILE, "--to", "a", "--manifest", "m.json"], /unknown flag --manifest/);
  refused(["import", ...FILE, "--from", "a", "--before", "2020-01-01T00:00:00Z"], /unknown flag --before/);
  refused(["import", ...FILE, "--from", "a", "--existing", "overwrite"], /--existing must be refuse or skip/);
  refused(["export", ...SERVER, "--to-schema", "agents"], /--to-schema must name another schema than --schema/);
  refused(["import", ...SERVER, "--from-schema", "bad;name"], /--from-schema must be a plain SQL identifier/);
  refused([...FILE, "export", "--to", "a"], /the command export must come first/);
  refused(["export", "--to", "a"], /--backend is required/);
  refused(["export", ...FILE, "--to", "a", "--apply=yes"], /--apply must be true or false/);
  refused(["export", ...FILE, "--to", "a", "--user", ""], /--user must not be empty/);
});

test("export and import never echo a connection string typed in place of a variable name", () => {
  for (const argv of [
    ["export", ...SERVER, "--to-schema", "x", "--to-serverdb-env", "postgres://u:hunter2@db/x"],
    ["import", ...SERVER, "--from-schema", "x", "--from-serverdb-env", "postgres://u:hunter2@db/x"],
  ]) {
    assert.throws(() => parseArgs(argv), (error: Error) => error instanceof MaintenanceRefusal && /must be the name of an environment variable/.test(error.message) && !error.message.includes("hunter2"));
  }
  assert.deepEqual(parseArgs(["import", "--help"]), { help: true });
});
