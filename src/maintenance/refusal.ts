/**
 * Why the maintenance command stopped without changing anything. The message is one line, never
 * carries checkpoint content or credentials, and is what the operator reads on stderr.
 */
export class MaintenanceRefusal extends Error {
  /** 2: the command line or manifest is invalid; 1: the database state or an SQL error refused it. */
  readonly exitCode: 1 | 2;

  constructor(message: string, exitCode: 1 | 2 = 1) {
    super(oneLine(message));
    this.name = "MaintenanceRefusal";
    this.exitCode = exitCode;
  }
}

/** Collapse whitespace so a reason always fits the single stderr line the operator greps for. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** Any failure as a refusal: a refusal as it is, anything else as `prefix: <its message>`. */
export function asRefusal(error: unknown, prefix: string): MaintenanceRefusal {
  if (error instanceof MaintenanceRefusal) return error;
  const reason = error instanceof Error ? error.message : String(error);
  return new MaintenanceRefusal(`${prefix}: ${reason}`);
}
