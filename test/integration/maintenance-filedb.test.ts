// bin/maintenance on a real SQLite file written by the SqliteSaver: the shared suite, plus the
// command-line surface (exit status, JSON on stdout, one-line reasons on stderr).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { filedb, say, writeManifest } from "../fixtures/maintenance/harness.ts";
import { defineMaintenanceSuite } from "../fixtures/maintenance/suite.ts";

defineMaintenanceSuite(filedb, ["checkpoints"]);

const BIN = fileURLToPath(new URL("../../bin/maintenance", import.meta.url));

interface Exit {
  code: number;
  stdout: string;
  stderr: string;
}

function maintenance(args: readonly string[], env: Record<string, string> = {}): Promise<Exit> {
  return new Promise((resolve) => {
    execFile(BIN, args, { env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", AGENTHOST_DOTENV: "off", ...env } }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

function assertRefused(exit: Exit, code: number, reason: RegExp) {
  assert.equal(exit.code, code, exit.stderr);
  assert.equal(exit.stdout, "");
  assert.equal(exit.stderr.trimEnd().split("\n").length, 1, `more than one line: ${exit.stderr}`);
  assert.match(exit.stderr, reason);
}

test("bin/maintenance: --help names the command as installed, explains every flag and exits 0", async () => {
  const exit = await maintenance(["--help"]);
  assert.equal(exit.code, 0);
  assert.match(exit.stdout, /^Usage: agenthost-maintenance --backend /);
  for (const flag of ["--backend", "--filedb-path", "--serverdb-env", "--schema", "--manifest", "--before", "--apply", "--version"]) {
    assert.ok(exit.stdout.includes(flag), `--help does not mention ${flag}`);
  }
});

test("bin/maintenance: --version and -v print the package's version and nothing else", async () => {
  const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
  for (const flag of ["--version", "-v"]) {
    const exit = await maintenance([flag]);
    assert.deepEqual(exit, { code: 0, stdout: `${version}\n`, stderr: "" }, flag);
  }
});

test("bin/maintenance: a dry run prints the JSON report and exits 0; refusals exit non-zero with one line", async () => {
  const db = await filedb();
  try {
    const saver = await db.openSaver();
    await say(saver, "legacy-cli", "hello");
    await db.closeSavers();
    const manifest = writeManifest(db, [{ old_thread_id: "legacy-cli", user_id: "alice", agent_id: "chatbot-agent" }]);
    const before = await db.dump();

    const [dry, explicitFalse, maybe, both, neither, bare, missing] = await Promise.all([
      maintenance([...db.flags, "--manifest", manifest]),
      maintenance([...db.flags, "--manifest", manifest, "--apply=false"]),
      maintenance([...db.flags, "--manifest", manifest, "--apply=maybe"]),
      maintenance([...db.flags, "--manifest", manifest, "--before", "2020-01-01T00:00:00Z"]),
      maintenance([...db.flags]),
      maintenance([...db.flags, "--manifest", manifest, "--apply"]),
      maintenance([...db.flags, "--manifest", writeManifest(db, [{ old_thread_id: "nope", user_id: "a", agent_id: "b" }]), "--apply=true"]),
    ]);
    assert.equal(dry.code, 0, dry.stderr);
    assert.equal(dry.stderr, "");
    const report = JSON.parse(dry.stdout) as { operation: string; applied: boolean; rows: Record<string, number> };
    assert.equal(report.operation, "migrate");
    assert.equal(report.applied, false);
    assert.ok((report.rows.checkpoints ?? 0) > 0);
    assert.equal(explicitFalse.code, 0);
    assert.deepEqual(JSON.parse(explicitFalse.stdout), report);

    assertRefused(maybe, 2, /^maintenance: invalid arguments: --apply must be true or false/);
    assertRefused(both, 2, /give either --manifest \(migration\) or --before \(retention\), not both/);
    assertRefused(neither, 2, /give one of --manifest FILE \(migration\) or --before ISO8601 \(retention\)/);
    assertRefused(bare, 2, /--apply needs a value/);
    assertRefused(missing, 1, /^maintenance: refused, nothing changed: source "nope" of manifest\[0\] has no checkpoints/);
    assert.deepEqual(await db.dump(), before);

    const applied = await maintenance([...db.flags, "--manifest", manifest, "--apply=true"]);
    assert.equal(applied.code, 0, applied.stderr);
    assert.equal((JSON.parse(applied.stdout) as { applied: boolean }).applied, true);
  } finally {
    await db.dispose();
  }
});

test("bin/maintenance: a file database that does not exist is refused, not created", async () => {
  const db = await filedb();
  try {
    const path = `${db.dir}/typo.sqlite`;
    const exit = await maintenance(["--backend", "filedb", "--filedb-path", path, "--before", "2020-01-01T00:00:00Z"]);
    assertRefused(exit, 1, /file database ".*typo\.sqlite" does not exist/);
    assert.equal((await import("node:fs")).existsSync(path), false);
  } finally {
    await db.dispose();
  }
});
