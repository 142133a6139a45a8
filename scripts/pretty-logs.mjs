// Turns agenthost's JSON log lines into one readable line each, for `npm run dev` (pino-pretty is
// not a dependency; this does the little that development needs). Lines that are not JSON (startup
// refusals, Node's own "Restarting" notes) pass through unchanged.
//
//   bin/agenthost | node scripts/pretty-logs.mjs
import { createInterface } from "node:readline";

const LEVELS = { 10: "TRACE", 20: "DEBUG", 30: "INFO", 40: "WARN", 50: "ERROR", 60: "FATAL" };
const COLORS = { 10: 90, 20: 36, 30: 32, 40: 33, 50: 31, 60: 35 };
/** Fields every line has, shown in the line's head or not at all. */
const HEAD = new Set(["level", "time", "pid", "hostname", "msg", "role", "worker"]);

function value(v) {
  if (typeof v === "string") return /\s|"/.test(v) ? JSON.stringify(v) : v;
  return JSON.stringify(v);
}

/** One JSON log line as `HH:MM:SS.mmm LEVEL who  message  key=value …` (and an error's stack below it), or undefined when it is not one. */
export function prettyLine(line, color = false) {
  let entry;
  try {
    entry = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof entry !== "object" || entry === null || typeof entry.level !== "number") return undefined;
  const time = new Date(entry.time ?? Date.now()).toISOString().slice(11, 23);
  const name = (LEVELS[entry.level] ?? String(entry.level)).padEnd(5);
  const level = color ? `\u001b[${COLORS[entry.level] ?? 0}m${name}\u001b[0m` : name;
  const who = entry.role === "primary" ? "primary " : entry.worker !== undefined ? `worker ${entry.worker}` : "worker  ";
  let stack;
  const fields = [];
  for (const [key, v] of Object.entries(entry)) {
    if (HEAD.has(key)) continue;
    if (key === "err" && v && typeof v === "object" && typeof v.stack === "string") {
      stack = v.stack;
      fields.push(`err=${value(v.message)}`);
      continue;
    }
    fields.push(`${key}=${value(v)}`);
  }
  const text = `${time} ${level} ${who}  ${entry.msg ?? ""}${fields.length ? `  ${fields.join(" ")}` : ""}`;
  return stack ? `${text}\n${stack.split("\n").slice(1).join("\n")}` : text;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const color = process.stdout.isTTY === true;
  for await (const line of createInterface({ input: process.stdin })) {
    process.stdout.write(`${prettyLine(line, color) ?? line}\n`);
  }
}
