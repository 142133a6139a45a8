/** One variable of this process's environment, for tools that are told its name (bin/maintenance --serverdb-env). */
export function environmentVariable(name: string): string | undefined {
  return process.env[name];
}
