import { z } from "zod";
import { MaintenanceRefusal } from "./refusal.ts";
import { parseInstant } from "./timestamp.ts";

/** Where the checkpoints live. The connection string itself is read later, from `envName`. */
export type Target =
  | { readonly backend: "filedb"; readonly path: string }
  | { readonly backend: "serverdb"; readonly envName: string; readonly schema: string };

export type Operation =
  | { readonly kind: "migrate"; readonly manifestPath: string }
  | { readonly kind: "retention"; readonly before: string; readonly cutoff: bigint };

export interface MaintenanceOptions {
  readonly target: Target;
  readonly operation: Operation;
  readonly apply: boolean;
}

export type ParsedArgs = { readonly help: true } | ({ readonly help: false } & MaintenanceOptions);

const FLAGS = ["backend", "filedb-path", "serverdb-env", "schema", "manifest", "before", "apply"] as const;
type Flag = (typeof FLAGS)[number];

const nonEmpty = z.string().min(1, { error: "must not be empty" });

const flagSchema = z.object({
  backend: z.enum(["filedb", "serverdb"], { error: "must be filedb or serverdb" }),
  "filedb-path": nonEmpty.optional(),
  // The value is never echoed back: someone may have typed a connection string here.
  "serverdb-env": z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: "must be the name of an environment variable, not its value" })
    .optional(),
  schema: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, { error: "must be a plain SQL identifier" })
    .optional(),
  manifest: nonEmpty.optional(),
  before: nonEmpty.optional(),
  apply: z.enum(["true", "false"], { error: "must be true or false (--apply=true executes)" }).optional(),
});

/**
 * Read the command line. Flags are `--name=value` or `--name value`; each may appear once; there are
 * no positional arguments. Every problem found is reported together, on one line, and no argument
 * value is echoed (a password typed in the wrong place must not reach a log).
 */
export function parseArgs(argv: readonly string[], now: Date = new Date()): ParsedArgs {
  const raw: Partial<Record<Flag, string>> = {};
  const problems: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === "-h" || arg === "--help") return { help: true };
    if (!arg.startsWith("--")) {
      problems.push(`unexpected argument #${i + 1} (flags are --name=value)`);
      continue;
    }
    const eq = arg.indexOf("=");
    const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    if (!(FLAGS as readonly string[]).includes(name)) {
      problems.push(`unknown flag --${name.replace(/[^A-Za-z0-9_-]/g, "?").slice(0, 40)}`);
      if (eq === -1 && argv[i + 1] !== undefined && !argv[i + 1]?.startsWith("--")) i++;
      continue;
    }
    const flag = name as Flag;
    let value: string | undefined;
    if (eq !== -1) value = arg.slice(eq + 1);
    else if (argv[i + 1] !== undefined && !argv[i + 1]?.startsWith("--")) value = argv[++i];
    if (value === undefined) {
      problems.push(
        flag === "apply"
          ? "--apply needs a value: --apply=true executes, --apply=false or no --apply is a dry run"
          : `--${flag} needs a value`,
      );
      continue;
    }
    if (raw[flag] !== undefined) {
      problems.push(`--${flag} is given more than once`);
      continue;
    }
    raw[flag] = value;
  }

  const parsed = flagSchema.safeParse(raw);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const flag = String(issue.path[0]);
      problems.push(raw[flag as Flag] === undefined ? `--${flag} is required` : `--${flag} ${issue.message}`);
    }
  }
  if (raw.manifest !== undefined && raw.before !== undefined) {
    problems.push("give either --manifest (migration) or --before (retention), not both");
  } else if (raw.manifest === undefined && raw.before === undefined) {
    problems.push("give one of --manifest FILE (migration) or --before ISO8601 (retention)");
  }
  if (raw.backend === "filedb") {
    if (raw["filedb-path"] === undefined) problems.push("--backend filedb requires --filedb-path");
    for (const f of ["serverdb-env", "schema"] as const) {
      if (raw[f] !== undefined) problems.push(`--${f} applies only to --backend serverdb`);
    }
  } else if (raw.backend === "serverdb" && raw["filedb-path"] !== undefined) {
    problems.push("--filedb-path applies only to --backend filedb");
  }
  let cutoff: bigint | undefined;
  if (raw.before !== undefined && raw.before !== "") {
    cutoff = parseInstant(raw.before);
    if (cutoff === undefined) {
      problems.push("--before must be an ISO 8601 date and time with a timezone, e.g. 2025-01-31T00:00:00Z");
    } else if (cutoff > BigInt(now.getTime()) * 1_000_000n) {
      problems.push("--before is in the future; retention would delete threads that are still active");
    }
  }
  if (problems.length > 0 || !parsed.success) {
    throw new MaintenanceRefusal(`invalid arguments: ${problems.join("; ")} (see --help)`, 2);
  }

  const flags = parsed.data;
  const target: Target =
    flags.backend === "filedb"
      ? { backend: "filedb", path: flags["filedb-path"] as string }
      : { backend: "serverdb", envName: flags["serverdb-env"] ?? "DATABASE_URL", schema: flags.schema ?? "public" };
  const operation: Operation =
    flags.manifest !== undefined
      ? { kind: "migrate", manifestPath: flags.manifest }
      : { kind: "retention", before: flags.before as string, cutoff: cutoff as bigint };
  return { help: false, target, operation, apply: flags.apply === "true" };
}
