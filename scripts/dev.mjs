#!/usr/bin/env node
// `npm run dev [-- node flags]`: agenthost for development. One worker on 127.0.0.1, ENV_MODE=development
// (no token needed; unreachable PostgreSQL or Redis refuse to start), the fake model unless a provider
// is configured, conversations in data/agenthost.sqlite so they survive the restarts, readable logs,
// and a restart whenever a file under src/ or workers/, or an AGENT_PATHS file, changes (node --watch).
// Every default gives way to a variable in .env (in the working directory, if there is one; see
// .env.example), and that to one set in the environment. Node flags pass through:
// `npm run dev -- --inspect` (the primary on 9229, the worker on 9230: attach there).
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { parseEnv } from "node:util";
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

/** The working directory's .env, if any (Node's own parser: `NAME=value` lines, # comments). */
function dotEnv() {
  const file = path.resolve(".env");
  return existsSync(file) ? parseEnv(readFileSync(file, "utf8")) : {};
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const env = devEnvironment({ ...dotEnv(), ...process.env });
  const watched = [path.join(ROOT, "src"), path.join(ROOT, "workers"), ...agentFiles(env.AGENT_PATHS)];
  const args = [...watched.map((p) => `--watch-path=${p}`), "--watch-preserve-output", ...process.argv.slice(2), path.join(ROOT, "bin/agenthost")];
  const child = spawn(process.execPath, args, { env, stdio: ["inherit", "pipe", "inherit"] });
  const color = process.stdout.isTTY === true;
  process.stdout.write(
    `agenthost dev: http://${env.HOST}:${env.PORT ?? 8080} (${env.USE_FAKE_MODEL === "true" ? "fake model" : "configured models"}, ${env.MEMORY_BACKEND}); restarts on changes to src/, workers/${watched.length > 2 ? " and AGENT_PATHS files" : ""}; Ctrl-C stops\n`,
  );
  const lines = createInterface({ input: child.stdout });
  lines.on("line", (line) => process.stdout.write(`${prettyLine(line, color) ?? line}\n`));
  // Ctrl-C reaches the whole process group; wait for agenthost to drain and exit with its code.
  process.on("SIGINT", () => {});
  process.on("SIGTERM", () => child.kill("SIGTERM"));
  child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}
