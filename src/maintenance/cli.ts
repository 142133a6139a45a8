// Entry of bin/maintenance: parse the flags, run, print the JSON report; any refusal is one line on
// stderr and a non-zero exit status. The only environment variables read are the ones --serverdb-env
// (and a transfer's --to-serverdb-env / --from-serverdb-env) name.
import { environmentVariable } from "../config/environment.ts";
import { parseArgs, type MaintenanceOptions } from "./args.ts";
import { HELP_TEXT } from "./help.ts";
import { MaintenanceRefusal, oneLine } from "./refusal.ts";
import { runMaintenance } from "./run.ts";

/** Remove a connection string and its password from a message before it is printed. */
export function redact(message: string, secrets: readonly string[]): string {
  let text = message;
  for (const secret of secrets) if (secret.length >= 3) text = text.split(secret).join("[redacted]");
  return text;
}

function secretsOf(url: string | undefined): string[] {
  if (!url) return [];
  const secrets = [url];
  try {
    const password = new URL(url).password;
    if (password) secrets.push(password, decodeURIComponent(password));
  } catch {
    // Not a URL (a key=value connection string): the whole string is still redacted.
  }
  return secrets;
}

/** The variables that hold connection strings this run uses: the service's, and a transfer's other database's. */
function connectionVariables(args: MaintenanceOptions): string[] {
  const names: string[] = [];
  if (args.target.backend === "serverdb") names.push(args.target.envName);
  const { operation } = args;
  const other = operation.kind === "export" ? operation.to : operation.kind === "import" ? operation.from : undefined;
  if (other?.kind === "postgres") names.push(other.envName);
  return names;
}

async function main(argv: readonly string[]): Promise<number> {
  let envNames: string[] = [];
  try {
    const args = parseArgs(argv);
    if (args.help) {
      process.stdout.write(HELP_TEXT);
      return 0;
    }
    envNames = connectionVariables(args);
    const report = await runMaintenance(args, { readVariable: environmentVariable });
    console.log(JSON.stringify(report, null, 2));
    return 0;
  } catch (error) {
    const secrets = envNames.flatMap((name) => secretsOf(environmentVariable(name)));
    if (error instanceof MaintenanceRefusal) {
      console.error(`maintenance: ${redact(error.message, secrets)}`);
      return error.exitCode;
    }
    const reason = error instanceof Error ? error.message : String(error);
    console.error(`maintenance: failed, nothing changed: ${redact(oneLine(reason), secrets)}`);
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
