import { z } from "zod";
import { MaintenanceRefusal } from "./refusal.ts";
import { parseInstant } from "./timestamp.ts";
import { parseTransferFlags, TRANSFER_FLAGS, type TransferCommand, type TransferOperation } from "./transfer-args.ts";

/** Where the checkpoints live. The connection string itself is read later, from `envName`. */
export type Target =
  | { readonly backend: "filedb"; readonly path: string }
  | { readonly backend: "serverdb"; readonly envName: string; readonly schema: string };

export type Operation =
  | { readonly kind: "migrate"; readonly manifestPath: string }
  | { readonly kind: "retention"; readonly before: string; readonly cutoff: bigint }
  | TransferOperation;

export interface MaintenanceOptions {
  readonly target: Target;
  readonly operation: Operation;
  readonly apply: boolean;
}

export type ParsedArgs = { readonly help: true } | ({ readonly help: false } & MaintenanceOptions);

/** Flags of every command: the service's database and --apply. */
const COMMON_FLAGS = ["backend", "filedb-path", "serverdb-env", "schema", "apply"] as const;
/** Flags of migration and retention, the commands run without a command word. */
const WINDOW_FLAGS = ["manifest", "before"] as const;
type Flag = (typeof COMMON_FLAGS)[number] | (typeof WINDOW_FLAGS)[number];

const COMMANDS: readonly string[] = ["export", "import"] satisfies TransferCommand[];

const nonEmpty = z.string().min(1, { error: "must not be empty" });

const commonSchema = z.object({
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
  apply: z.enum(["true", "false"], { error: "must be true or false (--apply=true executes)" }).optional(),
});

const windowSchema = z.object({ manifest: nonEmpty.optional(), before: nonEmpty.optional() });

/**
 * Split the flags: `--name=value` or `--name value`, each at most once, no positional arguments
 * (past the command word, which the caller has taken off: `skipped` counts it for the messages).
 * Undefined when help was asked for.
 */
function readFlags(argv: readonly string[], names: readonly string[], skipped: number, problems: string[]): Record<string, string> | undefined {
  const raw: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === "-h" || arg === "--help") return undefined;
    if (!arg.startsWith("--")) {
      problems.push(
        COMMANDS.includes(arg)
          ? `the command ${arg} must come first`
          : `unexpected argument #${i + 1 + skipped} (flags are --name=value)`,
      );
      continue;
    }
    const eq = arg.indexOf("=");
    const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    if (!names.includes(name)) {
      problems.push(`unknown flag --${name.replace(/[^A-Za-z0-9_-]/g, "?").slice(0, 40)}`);
      if (eq === -1 && argv[i + 1] !== undefined && !argv[i + 1]?.startsWith("--")) i++;
      continue;
    }
    let value: string | undefined;
    if (eq !== -1) value = arg.slice(eq + 1);
    else if (argv[i + 1] !== undefined && !argv[i + 1]?.startsWith("--")) value = argv[++i];
    if (value === undefined) {
      problems.push(
        name === "apply"
          ? "--apply needs a value: --apply=true executes, --apply=false or no --apply is a dry run"
          : `--${name} needs a value`,
      );
      continue;
    }
    if (raw[name] !== undefined) {
      problems.push(`--${name} is given more than once`);
      continue;
    }
    raw[name] = value;
  }
  return raw;
}

/** Zod's problems of one group of flags, in the command line's words. */
function flagProblems(raw: Readonly<Record<string, string>>, issues: readonly z.core.$ZodIssue[]): string[] {
  return issues.map((issue) => {
    const flag = String(issue.path[0]);
    return raw[flag] === undefined ? `--${flag} is required` : `--${flag} ${issue.message}`;
  });
}

/**
 * Read the command line: an optional command word first (`export`, `import`; none: migration or
 * retention), then flags, `--name=value` or `--name value`, each at most once, and no other
 * positional arguments. Every problem found is reported together, on one line, and no argument
 * value is echoed (a password typed in the wrong place must not reach a log).
 */
export function parseArgs(argv: readonly string[], now: Date = new Date()): ParsedArgs {
  const command = COMMANDS.includes(argv[0] ?? "") ? (argv[0] as TransferCommand) : undefined;
  const names: readonly string[] = [...COMMON_FLAGS, ...(command ? TRANSFER_FLAGS[command] : WINDOW_FLAGS)];
  const problems: string[] = [];
  const raw = readFlags(command ? argv.slice(1) : argv, names, command ? 1 : 0, problems);
  if (raw === undefined) return { help: true };

  const common = commonSchema.safeParse(raw);
  if (!common.success) problems.push(...flagProblems(raw, common.error.issues));
  if (raw.backend === "filedb") {
    if (raw["filedb-path"] === undefined) problems.push("--backend filedb requires --filedb-path");
    for (const f of ["serverdb-env", "schema"] as const) {
      if (raw[f] !== undefined) problems.push(`--${f} applies only to --backend serverdb`);
    }
  } else if (raw.backend === "serverdb" && raw["filedb-path"] !== undefined) {
    problems.push("--filedb-path applies only to --backend filedb");
  }

  let operation: Operation | undefined;
  if (command) {
    const own = Object.fromEntries(Object.entries(raw).filter(([name]) => !(COMMON_FLAGS as readonly string[]).includes(name)));
    const service = { backend: raw.backend, envName: raw["serverdb-env"], schema: raw.schema };
    operation = parseTransferFlags(command, own, service, problems);
  } else {
    operation = windowOperation(raw as Partial<Record<Flag, string>>, now, problems);
  }
  if (problems.length > 0 || !common.success || operation === undefined) {
    throw new MaintenanceRefusal(`invalid arguments: ${problems.join("; ")} (see --help)`, 2);
  }

  const flags = common.data;
  const target: Target =
    flags.backend === "filedb"
      ? { backend: "filedb", path: flags["filedb-path"] as string }
      : { backend: "serverdb", envName: flags["serverdb-env"] ?? "DATABASE_URL", schema: flags.schema ?? "public" };
  return { help: false, target, operation, apply: flags.apply === "true" };
}

/** Migration (--manifest) or retention (--before): exactly one of them. */
function windowOperation(raw: Partial<Record<Flag, string>>, now: Date, problems: string[]): Operation | undefined {
  const parsed = windowSchema.safeParse(raw);
  if (!parsed.success) problems.push(...flagProblems(raw as Record<string, string>, parsed.error.issues));
  if (raw.manifest !== undefined && raw.before !== undefined) {
    problems.push("give either --manifest (migration) or --before (retention), not both");
  } else if (raw.manifest === undefined && raw.before === undefined) {
    problems.push("give one of --manifest FILE (migration) or --before ISO8601 (retention), or a command first: export, import");
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
  if (!parsed.success) return undefined;
  if (parsed.data.manifest !== undefined) return { kind: "migrate", manifestPath: parsed.data.manifest };
  if (parsed.data.before !== undefined && cutoff !== undefined) return { kind: "retention", before: parsed.data.before, cutoff };
  return undefined;
}
