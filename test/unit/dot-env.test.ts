// bin/lib/dot-env.js: which settings file the commands read, and what it adds to their environment.
// (test/cluster/dot-env.test.ts starts the commands themselves in a folder holding a .env.)
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
// @ts-expect-error: a plain ES module without declarations
import * as dotEnvModule from "../../bin/lib/dot-env.js";

type Env = Record<string, string | undefined>;
const { readDotEnv, dotEnvFile, DotEnvError } = dotEnvModule as {
  readDotEnv(env: Env, cwd: string): string | undefined;
  dotEnvFile(env: Env, cwd: string): string | undefined;
  DotEnvError: new (message: string) => Error;
};

const dir = mkdtempSync(path.join(os.tmpdir(), "agenthost-dot-env-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A fresh folder under the test's, holding `files`. */
function folder(name: string, files: Record<string, string> = {}): string {
  const at = path.join(dir, name);
  mkdirSync(at);
  for (const [file, text] of Object.entries(files)) writeFileSync(path.join(at, file), text);
  return at;
}

test("the working directory's .env fills in what the environment does not set; the environment wins, even when empty", () => {
  const cwd = folder("plain", {
    ".env": "# a comment\nPORT=3000\nAUTH_SECRET=\"from the file\"\nHOST=0.0.0.0 # trailing comment\nLOG_LEVEL=debug\nEMPTY=\n",
  });
  const env: Env = { AUTH_SECRET: "from-the-environment", LOG_LEVEL: "" };
  assert.equal(readDotEnv(env, cwd), path.join(cwd, ".env"));
  assert.deepEqual(env, { AUTH_SECRET: "from-the-environment", LOG_LEVEL: "", PORT: "3000", HOST: "0.0.0.0", EMPTY: "" });
});

test("no .env: nothing is read and the environment is left as it was", () => {
  const cwd = folder("none");
  const env: Env = { PORT: "1" };
  assert.equal(readDotEnv(env, cwd), undefined);
  assert.deepEqual(env, { PORT: "1" });
});

test("AGENTHOST_DOTENV=off reads no file; AGENTHOST_DOTENV=<file> reads that one, relative to the working directory", () => {
  const cwd = folder("switch", { ".env": "PORT=3000\n", "staging.env": "PORT=4000\n" });
  for (const off of ["off", "OFF", " off "]) {
    const env: Env = { AGENTHOST_DOTENV: off };
    assert.equal(readDotEnv(env, cwd), undefined);
    assert.equal(env.PORT, undefined);
  }
  const env: Env = { AGENTHOST_DOTENV: "staging.env" };
  assert.equal(readDotEnv(env, cwd), path.join(cwd, "staging.env"));
  assert.equal(env.PORT, "4000");
  // Empty counts as unset: the default file.
  assert.equal(dotEnvFile({ AGENTHOST_DOTENV: "" }, cwd), path.join(cwd, ".env"));
});

test("a named file that does not exist, or a .env that cannot be read, is one line naming the file and the way out", () => {
  const cwd = folder("broken");
  assert.throws(
    () => readDotEnv({ AGENTHOST_DOTENV: "missing.env" }, cwd),
    (error: Error) =>
      error instanceof DotEnvError &&
      error.message === `agenthost: AGENTHOST_DOTENV names ${path.join(cwd, "missing.env")}, which does not exist: create it, or set AGENTHOST_DOTENV=off to read no file`,
  );
  mkdirSync(path.join(cwd, ".env"));
  assert.throws(
    () => readDotEnv({}, cwd),
    (error: Error) => error instanceof DotEnvError && error.message === `agenthost: cannot read the settings file ${path.join(cwd, ".env")} (EISDIR): make it readable, or set AGENTHOST_DOTENV=off to read no file`,
  );
  if (process.getuid?.() !== 0) {
    const locked = folder("locked", { ".env": "PORT=1\n" });
    chmodSync(path.join(locked, ".env"), 0o000);
    assert.throws(() => readDotEnv({}, locked), /\(EACCES\)/);
  }
});
