// Writes .env.example: every setting agenthost reads, in the order of src/config/schema.ts, with its
// default (from the schema) and its meaning (from the table of docs/configuration.md, which a test keeps
// in step with the schema). test/unit/env-example.test.ts fails when the file is out of date.
//
//   npm run env:example
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { configShape, type ConfigKey } from "../src/config/schema.ts";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

interface Row {
  readonly meaning: string;
  readonly documentedDefault: string;
}

/** The settings table of docs/configuration.md: variable → its default and meaning as written there. */
function documentedRows(page: string): Map<string, Row> {
  const start = page.indexOf("## Every setting");
  const section = page.slice(start, page.indexOf("\n## ", start + 5));
  const rows = new Map<string, Row>();
  for (const line of section.split("\n")) {
    // An empty Default cell is `| |`: one space between the bars, so the cells' spaces are optional.
    const cells = /^\| ?([A-Z0-9_, ]+?) ?\| ?(.*?) ?\| ?(.*?) ?\|$/.exec(line);
    if (!cells || cells[1] === "Variable") continue;
    const plain = (text: string) => text.replace(/`/g, "").trim();
    for (const name of cells[1]!.split(",")) rows.set(name.trim(), { documentedDefault: plain(cells[2]!), meaning: plain(cells[3]!) });
  }
  return rows;
}

/**
 * The schema's default as an environment value: empty when there is none (or it depends on other
 * settings). A list or object default is written in whichever form reads back as that default: JSON
 * (AGENT_PATHS=[]) or a comma list (DEEP_AGENT_INTERRUPT_ON=, CORS_ALLOW_ORIGINS=: empty, since `[]`
 * is not an origin).
 */
function schemaDefault(key: ConfigKey): string {
  const parsed = configShape[key].safeParse(undefined);
  if (!parsed.success || parsed.data === undefined) return "";
  const value: unknown = parsed.data;
  if (typeof value !== "object" || value === null) return String(value as string | number | boolean);
  const forms = [JSON.stringify(value), ...(Array.isArray(value) ? [value.join(",")] : [])];
  const readsBack = forms.find((form) => {
    const again = configShape[key].safeParse(form);
    return again.success && JSON.stringify(again.data) === JSON.stringify(value);
  });
  if (readsBack === undefined) throw new Error(`${key}: no environment value reads back as its default ${JSON.stringify(value)}`);
  return readsBack;
}

/** The text of .env.example. */
export function renderEnvExample(page: string): string {
  const rows = documentedRows(page);
  const out = [
    "# Every setting agenthost reads, with its default. Generated from src/config/schema.ts (meanings from",
    "# docs/configuration.md) by `npm run env:example`; do not edit by hand.",
    "# Copy this file to .env and uncomment what you change: agenthost, its other commands and `npm run dev`",
    "# read .env from the working directory (a variable set in the environment wins; AGENTHOST_DOTENV=off",
    "# reads no file). Keep .env out of version control (.gitignore lists it). Empty values count as unset.",
    "# With ENV_MODE=production (the default) set AUTH_SECRET, AUTH_USERS or AUTH_JWT_ISSUER: production refuses to start without",
    "# a credential. Every other setting may stay as it is here.",
    "",
  ];
  for (const key of Object.keys(configShape) as ConfigKey[]) {
    const row = rows.get(key);
    const value = schemaDefault(key);
    const same = row !== undefined && (row.documentedDefault === value || (value !== "" && Number(row.documentedDefault) === Number(value)));
    const unlike = row && row.documentedDefault !== "" && !same ? ` (default: ${row.documentedDefault})` : "";
    out.push(`# ${row?.meaning ?? "(not in docs/configuration.md)"}${unlike}`, `# ${key}=${value}`, "");
  }
  return out.join("\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(path.join(ROOT, ".env.example"), renderEnvExample(readFileSync(path.join(ROOT, "docs/configuration.md"), "utf8")));
}
