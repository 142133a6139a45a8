#!/usr/bin/env node
// `npm run dev [-- node flags]`: agenthost for development. One worker on 127.0.0.1, ENV_MODE=development
// (no token needed; unreachable PostgreSQL or Redis refuse to start), the fake model unless a provider
// is configured, conversations in data/agenthost.sqlite so they survive the restarts, readable logs,
// and a restart whenever a file under src/ or workers/, or an AGENT_PATHS file, changes (node --watch).
// Every default gives way to a variable in .env (in the working directory, if there is one; see
// .env.example), and that to one set in the environment; .env is read once, when it starts. Node
// flags pass through: `npm run dev -- --inspect` (the primary on 9229, the worker on 9230: attach there).
// The banner is printed once the service listens. If it refuses to start the first time (PORT in
// use, an invalid setting), its one-line refusal is all that is printed and this exits 2, as
// bin/agenthost does: a file change would not fix that. Later, a restart that fails waits for the
// next change.
import { spawn } from "node:child_process";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { DOTENV_SWITCH, loadDotEnv } from "../bin/lib/dot-env.js";
import { prettyLine } from "./pretty-logs.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const PROVIDER_SETTINGS = ["OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "GOOGLE_API_KEY", "MODEL_CONFIGS", "DEFAULT_MODEL"];

/** The development defaults, under whatever the environment sets. */
export function devEnvironment(env = process.env) {
  const configured = PROVIDER_SETTINGS.some((name) => (env[name] ?? "").trim() !== "");
  return {
    ENV_MODE: "development",
    HOST: "127.0.0.1",
    WEB_CONCURRENCY: "1",
    MEMORY_BACKEND: "filedb",
    // A restart on change should not wait for a slow stream the way a deploy does.
    SHUTDOWN_GRACE: "2",
    ...(configured ? {} : { USE_FAKE_MODEL: "true" }),
    ...Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v.trim() !== "")),
    LANGCHAIN_CALLBACKS_BACKGROUND: "false",
  };
}

/** The files AGENT_PATHS names (entries starting with ./ or /), to watch as well. */
export function agentFiles(agentPaths) {
  try {
    const entries = JSON.parse(agentPaths ?? "[]");
    if (!Array.isArray(entries)) return [];
    return entries
      .filter((e) => typeof e === "string" && (e.startsWith(".") || e.startsWith("/")) && e.lastIndexOf(":") > 0)
      .map((e) => path.resolve(e.slice(0, e.lastIndexOf(":"))));
  } catch {
    return []; // agenthost itself names the problem
  }
}

/** A startup refusal's first line, as bin/agenthost prints it on stderr. */
const REFUSAL = /^agenthost cannot start[:;]/;
/** node --watch's note that the service exited with an error ("Failed running '…'", maybe coloured); never a JSON log line. */
const WATCH_FAILED = /^(?!\{).*Failed running /;
/** Levels at which the service writes no "listening" line to wait for. */
const QUIET_LEVELS = new Set(["warn", "error", "fatal", "silent"]);

if (import.meta.url === `file://${process.argv[1]}`) {
  // .env is read here, once, under the environment; the service gets the result and reads no file itself.
  const given = { ...process.env };
  loadDotEnv(given);
  const env = { ...devEnvironment(given), [DOTENV_SWITCH]: "off" };
  const watched = [path.join(ROOT, "src"), path.join(ROOT, "workers"), ...agentFiles(env.AGENT_PATHS)];
  const args = [...watched.map((p) => `--watch-path=${p}`), "--watch-preserve-output", ...process.argv.slice(2), path.join(ROOT, "bin/agenthost")];
  const child = spawn(process.execPath, args, { env, stdio: ["inherit", "pipe", "pipe"] });
  const color = process.stdout.isTTY === true;
  let announced = false;
  const announce = (port) => {
    if (announced) return;
    announced = true;
    process.stdout.write(
      `agenthost dev: http://${env.HOST}:${port} (${env.USE_FAKE_MODEL === "true" ? "fake model" : "configured models"}, ${env.MEMORY_BACKEND}); restarts on changes to src/, workers/${watched.length > 2 ? " and AGENT_PATHS files" : ""}; Ctrl-C stops\n`,
    );
  };
  // Without a "listening" line to wait for, the banner comes first, as it cannot say more.
  if (QUIET_LEVELS.has(env.LOG_LEVEL)) announce(env.PORT ?? 8080);
  /** The service has listened at least once: from then on a failed restart waits for the next change. */
  let listened = false;
  /** It refused to start before it ever listened: this stops, exit 2. */
  let refused = false;

  createInterface({ input: child.stderr }).on("line", (line) => {
    process.stderr.write(`${line}\n`);
    if (listened || refused || !REFUSAL.test(line)) return;
    refused = true;
    // The rest of the refusal (one line per problem) came in the same write: let it through, then stop watching.
    setImmediate(() => child.kill("SIGTERM"));
  });
  createInterface({ input: child.stdout }).on("line", (line) => {
    if (refused) return;
    if (!listened && WATCH_FAILED.test(line)) {
      // The refusal that explains this exit, written before it, may still be waiting in the stderr pipe.
      setImmediate(() => refused || process.stdout.write(`${line}\n`));
      return;
    }
    process.stdout.write(`${prettyLine(line, color) ?? line}\n`);
    const entry = logEntry(line);
    if (entry?.msg === "listening") {
      listened = true;
      announce(entry.port ?? env.PORT ?? 8080);
    }
  });
  // Ctrl-C reaches the whole process group; wait for agenthost to drain and exit with its code.
  process.on("SIGINT", () => {});
  process.on("SIGTERM", () => child.kill("SIGTERM"));
  child.on("exit", (code, signal) => process.exit(refused ? 2 : (code ?? (signal ? 1 : 0))));
}

/** A JSON log line of the service, or undefined for any other line. */
function logEntry(line) {
  if (!line.startsWith("{")) return undefined;
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}
