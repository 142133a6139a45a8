// bin/maintenance on the machine's PostgreSQL, one schema per test, written by the PostgresSaver:
// the shared suite, plus the connection-string handling of the command line.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { serverdb } from "../fixtures/maintenance/harness.ts";
import { defineMaintenanceSuite } from "../fixtures/maintenance/suite.ts";

defineMaintenanceSuite(serverdb, ["checkpoints", "checkpoint_blobs"]);

const BIN = fileURLToPath(new URL("../../bin/maintenance", import.meta.url));

function maintenance(args: readonly string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(BIN, args, { env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", AGENTHOST_DOTENV: "off", ...env } }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

test("bin/maintenance: the connection string comes from the named variable and is never printed", async () => {
  const flags = ["--backend", "serverdb", "--before", "2020-01-01T00:00:00Z"];
  const [unset, failing, urlAsName] = await Promise.all([
    maintenance([...flags, "--serverdb-env", "MAINT_DB"], {}),
    maintenance([...flags, "--serverdb-env", "MAINT_DB"], { MAINT_DB: "postgres://postgres:s3cret-pw@127.0.0.1:1/test" }),
    maintenance([...flags, "--serverdb-env", "postgres://postgres:s3cret-pw@127.0.0.1/test"], {}),
  ]);
  assert.equal(unset.code, 1);
  assert.match(unset.stderr, /^maintenance: MAINT_DB is not set/);
  assert.equal(failing.code, 1);
  assert.match(failing.stderr, /^maintenance: cannot connect to the server database/);
  assert.equal(urlAsName.code, 2);
  assert.match(urlAsName.stderr, /--serverdb-env must be the name of an environment variable, not its value/);
  for (const exit of [unset, failing, urlAsName]) {
    assert.equal(exit.stdout, "");
    assert.doesNotMatch(exit.stderr, /s3cret-pw/);
  }
});

test("bin/maintenance: a dry run against PostgreSQL prints the report with the schema and no credentials", async () => {
  const db = await serverdb();
  try {
    const exit = await maintenance([...db.flags, "--before", "2020-01-01T00:00:00Z"], db.env);
    assert.equal(exit.code, 0, exit.stderr);
    const report = JSON.parse(exit.stdout) as Record<string, unknown>;
    assert.equal(report.backend, "serverdb");
    assert.equal(report.schema, db.flags[db.flags.indexOf("--schema") + 1]);
    assert.deepEqual(report.eligible_threads, []);
    assert.ok(!exit.stdout.includes("postgres://"));
  } finally {
    await db.dispose();
  }
});
