/** The text `agenthost-maintenance --help` (bin/maintenance) prints: every flag, the modes, the exit status. */
export const HELP_TEXT = `Usage: agenthost-maintenance --backend filedb|serverdb (--manifest FILE | --before ISO8601) [options]

Checkpoint migration and retention for agenthost. Run it only while every service worker and
background writer is stopped, and after taking and verifying a backup: rollback = restore the backup.
Without --apply=true it is a dry run: it validates everything and reports what it would change,
and changes nothing.

Flags:
  --backend filedb|serverdb   which checkpoint database to work on (required):
                              filedb = the SQLite file, serverdb = PostgreSQL
  --filedb-path PATH          the SQLite file (filedb only, required there; the service's
                              FILEDB_DB_PATH). The file must already exist.
  --serverdb-env NAME         name of the environment variable that holds the PostgreSQL connection
                              string (serverdb only; default DATABASE_URL). Passwords are never
                              accepted as arguments.
  --schema NAME               PostgreSQL schema of the checkpoint tables (serverdb only; default
                              public; the service's SERVERDB_SCHEMA)
  --manifest FILE             migration: a JSON list of
                                {"old_thread_id", "user_id", "agent_id", "thread_id"?}
                              Each legacy thread old_thread_id moves to the storage key of
                              (user_id, agent_id, thread_id); thread_id defaults to old_thread_id.
                              No other fields, no empty strings.
  --before ISO8601            retention: delete whole threads whose latest checkpoint, across all
                              namespaces, is older than this instant. A timezone is required
                              (2025-01-31T00:00:00Z or 2025-01-31T00:00:00+02:00) and it may not
                              be in the future. Only canonical lat:v1: threads are eligible; legacy
                              raw thread ids are never touched.
  --apply=true|false          true: execute in one transaction. false or omitted: dry run.
                              Any other value is an error.
  -h, --help                  show this text
  -v, --version               print the version of agenthost

Exactly one of --manifest and --before is required. In a checkout of the repository the command
is bin/maintenance.

Output: a JSON report on stdout (operation, applied, row counts per table, and the thread mappings
or the eligible thread ids), never checkpoint content or credentials.
Exit status: 0 success; 1 refused or failed against the database (nothing was changed);
2 invalid command line or manifest (the database was not opened). The reason is one line on stderr.
`;
