// The settings file the commands in bin/ (through runEntry) and `npm run dev` read: `.env` in the
// working directory, parsed by Node's own util.parseEnv (`NAME=value` lines, # comments, quotes).
// A variable already in the environment wins over the file, even an empty one (empty counts as
// unset, so `PORT= bin/agenthost` undoes the file's PORT). AGENTHOST_DOTENV=off reads no file;
// AGENTHOST_DOTENV=<path> reads that file instead (relative to the working directory; it must exist).
// Plain JavaScript: it runs before anything is compiled.
import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { parseEnv } from "node:util";

/** The variable that turns the file off (`off`) or names another one. */
export const DOTENV_SWITCH = "AGENTHOST_DOTENV";

/** The file could not be read: `message` is the one line to print. */
export class DotEnvError extends Error {
  constructor(message) {
    super(message);
    this.name = "DotEnvError";
  }
}

/** The absolute path of the settings file to read for `env` in `cwd`, or undefined for none. */
export function dotEnvFile(env = process.env, cwd = process.cwd()) {
  const choice = (env[DOTENV_SWITCH] ?? "").trim();
  if (choice.toLowerCase() === "off") return undefined;
  const file = path.resolve(cwd, choice || ".env");
  return choice || present(file) ? file : undefined;
}

/** Whether there is something at `file`: anything but "no such file" counts, so reading it reports the problem. */
function present(file) {
  try {
    return statSync(file, { throwIfNoEntry: false }) !== undefined;
  } catch (error) {
    return error?.code !== "ENOTDIR";
  }
}

/**
 * Copy the settings file's variables into `env` (process.env by default), each one `env` does not
 * hold yet. Returns the absolute path of the file read, or undefined when there was none to read.
 * Throws DotEnvError when a file AGENTHOST_DOTENV names is missing, or one that exists cannot be read.
 */
export function readDotEnv(env = process.env, cwd = process.cwd()) {
  const file = dotEnvFile(env, cwd);
  if (file === undefined) return undefined;
  let text;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    if (error?.code === "ENOENT") {
      throw new DotEnvError(`agenthost: ${DOTENV_SWITCH} names ${file}, which does not exist: create it, or set ${DOTENV_SWITCH}=off to read no file`);
    }
    throw new DotEnvError(`agenthost: cannot read the settings file ${file} (${error?.code ?? error}): make it readable, or set ${DOTENV_SWITCH}=off to read no file`);
  }
  for (const [name, value] of Object.entries(parseEnv(text))) {
    if (!Object.hasOwn(env, name)) env[name] = value;
  }
  return file;
}

/**
 * For a command starting: read the settings file into `env` (process.env by default) and say on
 * stderr which file supplied settings (its path; never a value). A file that cannot be read stops
 * the command with that one line and exit code 2, as any other refusal to start.
 */
export function loadDotEnv(env = process.env) {
  let file;
  try {
    file = readDotEnv(env);
  } catch (error) {
    if (!(error instanceof DotEnvError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(2);
  }
  if (file !== undefined) process.stderr.write(`agenthost: settings read from ${file} (variables set in the environment win)\n`);
}
