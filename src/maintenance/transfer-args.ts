import { z } from "zod";

/**
 * The flags of `export` and `import`, the two commands that move conversations between agenthost's
 * database and LangGraph's standard checkpoint format (export.ts, import.ts). args.ts reads the
 * command line and hands the flags of these commands here.
 */

export type TransferCommand = "export" | "import";

/** A database in LangGraph's standard checkpoint format, read or written by the library's own saver. */
export type StandardLocation =
  | { readonly kind: "sqlite"; readonly path: string }
  | { readonly kind: "postgres"; readonly envName: string; readonly schema: string };

/** Which of the service's conversations to export; every given criterion must hold. */
export interface ExportSelection {
  /** One thread id as stored (a `lat:v1:` storage key, or a legacy raw id). */
  readonly threadId?: string;
  /** Conversations the conversation list says this user owns. */
  readonly userId?: string;
  /** Conversations the conversation list says belong to this agent. */
  readonly agentId?: string;
}

/** What import does with a conversation whose destination already has checkpoints. */
export type ExistingPolicy = "refuse" | "skip";

export type TransferOperation =
  | {
      readonly kind: "export";
      readonly to: StandardLocation;
      readonly selection: ExportSelection;
      /** Where to write the exported conversations' owners, in the --manifest format. */
      readonly ownersPath?: string;
    }
  | {
      readonly kind: "import";
      readonly from: StandardLocation;
      /** Owners of the source's threads (required for every raw thread id). */
      readonly manifestPath?: string;
      readonly existing: ExistingPolicy;
    };

/** Each command's own flags, besides --backend, --filedb-path, --serverdb-env, --schema and --apply. */
export const TRANSFER_FLAGS = {
  export: ["to", "to-schema", "to-serverdb-env", "thread", "user", "agent", "owners"],
  import: ["from", "from-schema", "from-serverdb-env", "manifest", "existing"],
} as const satisfies Record<TransferCommand, readonly string[]>;

const nonEmpty = z.string().min(1, { error: "must not be empty" });
// Never echoed back: someone may have typed a connection string here.
const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: "must be the name of an environment variable, not its value" });
const schemaName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, { error: "must be a plain SQL identifier" });

const exportSchema = z.object({
  to: nonEmpty.optional(),
  "to-schema": schemaName.optional(),
  "to-serverdb-env": envName.optional(),
  thread: nonEmpty.optional(),
  user: nonEmpty.optional(),
  agent: nonEmpty.optional(),
  owners: nonEmpty.optional(),
});

const importSchema = z.object({
  from: nonEmpty.optional(),
  "from-schema": schemaName.optional(),
  "from-serverdb-env": envName.optional(),
  manifest: nonEmpty.optional(),
  existing: z.enum(["refuse", "skip"], { error: "must be refuse or skip" }).optional(),
});

/** The service's database as the common flags name it: its connection variable and schema, for serverdb. */
export interface ServiceDatabase {
  readonly backend: string | undefined;
  readonly envName: string | undefined;
  readonly schema: string | undefined;
}

/**
 * The standard side of a transfer: a SQLite file (`--to`/`--from`) or a PostgreSQL schema
 * (`--to-schema`/`--from-schema`, connection string in `--to-serverdb-env`/`--from-serverdb-env`,
 * by default the service's own variable). Exactly one of the two; a schema may not be the service's.
 */
function standardLocation(
  raw: Readonly<Record<string, string>>,
  direction: "to" | "from",
  service: ServiceDatabase,
  problems: string[],
): StandardLocation | undefined {
  const path = raw[direction];
  const schema = raw[`${direction}-schema`];
  const env = raw[`${direction}-serverdb-env`];
  const what = direction === "to" ? "--to PATH (a new SQLite file) or --to-schema NAME (a new PostgreSQL schema)" : "--from PATH (a SQLite file) or --from-schema NAME (a PostgreSQL schema)";
  if (path !== undefined && schema !== undefined) {
    problems.push(`give either --${direction} or --${direction}-schema, not both`);
    return undefined;
  }
  if (path === undefined && schema === undefined) {
    problems.push(`give one of ${what}`);
    return undefined;
  }
  if (path !== undefined) {
    if (env !== undefined) problems.push(`--${direction}-serverdb-env applies only to --${direction}-schema`);
    return { kind: "sqlite", path };
  }
  const envName = env ?? (service.backend === "serverdb" ? (service.envName ?? "DATABASE_URL") : "DATABASE_URL");
  const serviceEnv = service.envName ?? "DATABASE_URL";
  if (service.backend === "serverdb" && envName === serviceEnv && schema === (service.schema ?? "public")) {
    problems.push(`--${direction}-schema must name another schema than --schema (the service's checkpoint tables)`);
  }
  return { kind: "postgres", envName, schema: schema as string };
}

/**
 * Validate the flags of `export` or `import` (already split and checked for repeats and unknown
 * names by args.ts). Problems are added to `problems`; the operation is returned when there were none.
 */
export function parseTransferFlags(
  command: TransferCommand,
  raw: Readonly<Record<string, string>>,
  service: ServiceDatabase,
  problems: string[],
): TransferOperation | undefined {
  const before = problems.length;
  const parsed = (command === "export" ? exportSchema : importSchema).safeParse(raw);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) problems.push(`--${String(issue.path[0])} ${issue.message}`);
    return undefined;
  }
  if (command === "export") {
    const flags = parsed.data as z.infer<typeof exportSchema>;
    const to = standardLocation(raw, "to", service, problems);
    if (problems.length > before || !to) return undefined;
    return {
      kind: "export",
      to,
      selection: {
        ...(flags.thread !== undefined ? { threadId: flags.thread } : {}),
        ...(flags.user !== undefined ? { userId: flags.user } : {}),
        ...(flags.agent !== undefined ? { agentId: flags.agent } : {}),
      },
      ...(flags.owners !== undefined ? { ownersPath: flags.owners } : {}),
    };
  }
  const flags = parsed.data as z.infer<typeof importSchema>;
  const from = standardLocation(raw, "from", service, problems);
  if (problems.length > before || !from) return undefined;
  return {
    kind: "import",
    from,
    ...(flags.manifest !== undefined ? { manifestPath: flags.manifest } : {}),
    existing: flags.existing ?? "refuse",
  };
}
