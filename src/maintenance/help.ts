/** The text `agenthost-maintenance --help` (bin/maintenance) prints: every command and flag, the modes, the exit status. */
export const HELP_TEXT = `Usage: agenthost-maintenance --backend filedb|serverdb (--manifest FILE | --before ISO8601) [options]
       agenthost-maintenance export --backend filedb|serverdb (--to PATH | --to-schema NAME) [options]
       agenthost-maintenance import --backend filedb|serverdb (--from PATH | --from-schema NAME) [options]

Checkpoint migration, retention, export and import for agenthost. Run it only while every service
worker and background writer is stopped, and after taking and verifying a backup: rollback =
restore the backup. Without --apply=true it is a dry run: it validates everything and reports what
it would change, and changes nothing.

The service's database (every command):
  --backend filedb|serverdb   which checkpoint database to work on (required):
                              filedb = the SQLite file, serverdb = PostgreSQL
  --filedb-path PATH          the SQLite file (filedb only, required there; the service's
                              FILEDB_DB_PATH). The file must already exist.
  --serverdb-env NAME         name of the environment variable that holds the PostgreSQL connection
                              string (serverdb only; default DATABASE_URL). Passwords are never
                              accepted as arguments.
  --schema NAME               PostgreSQL schema of the checkpoint tables (serverdb only; default
                              public; the service's SERVERDB_SCHEMA)
  --apply=true|false          true: execute. false or omitted: dry run. Any other value is an error.

Migration and retention (no command word; exactly one of):
  --manifest FILE             migration: a JSON list of
                                {"old_thread_id", "user_id", "agent_id", "thread_id"?}
                              Each legacy thread old_thread_id moves to the storage key of
                              (user_id, agent_id, thread_id); thread_id defaults to old_thread_id.
                              No other fields, no empty strings. Applied in one transaction.
  --before ISO8601            retention: delete whole threads whose latest checkpoint, across all
                              namespaces, is older than this instant. A timezone is required
                              (2025-01-31T00:00:00Z or 2025-01-31T00:00:00+02:00) and it may not
                              be in the future. Only canonical lat:v1: threads are eligible; legacy
                              raw thread ids are never touched. Applied in one transaction.

export and import lock nothing: the service being stopped is what keeps its workers' writes out.

export: the conversations in LangGraph's standard checkpoint format, written by LangGraph's own
SqliteSaver or PostgresSaver (same serializer as the service), every message resolved; thread ids
stay the storage keys. The service's own tables (conversation list, idempotency keys, ...) are not
carried. The target must not exist; it appears complete or not at all.
  --to PATH                   a new SQLite file
  --to-schema NAME            or a new PostgreSQL schema (the export creates it)
  --to-serverdb-env NAME      the variable holding that database's connection string (default:
                              --serverdb-env's, else DATABASE_URL)
  --thread ID                 only this thread (a storage key as stored)
  --user ID, --agent ID       only the conversations the conversation list gives this owner
  --owners FILE               also write the exported conversations' owners to this new file,
                              in the --manifest format (import --manifest FILE reads it back)

import: standard checkpoints (a SQLite file LangGraph's SqliteSaver wrote, or a schema its
PostgresSaver wrote) into the service's database, written through the service's own saver stack.
Every conversation is read back before anything is written; a failed apply deletes what it wrote.
  --from PATH                 the SQLite file (opened read-only)
  --from-schema NAME          or the PostgreSQL schema (read only)
  --from-serverdb-env NAME    the variable holding that database's connection string (default:
                              --serverdb-env's, else DATABASE_URL)
  --manifest FILE             owners, in the migration format: every raw (non lat:v1:) thread id
                              of the source needs an entry and is stored under its owner's key; a
                              lat:v1: id is kept as it is, and with an entry it enters its owner's
                              conversation list
  --existing refuse|skip      a thread whose destination already has checkpoints: refuse the whole
                              run (default), or skip it and import the others

  -h, --help                  show this text
  -v, --version               print the version of agenthost

In a checkout of the repository the command is bin/maintenance.

Output: a JSON report on stdout (operation, applied, row counts per table, and the thread mappings,
the eligible thread ids, or the threads exported or imported with their counts and owners), never
checkpoint content or credentials.
Exit status: 0 success; 1 refused or failed against a database (nothing was changed);
2 invalid command line or manifest (no database was opened). The reason is one line on stderr.
`;
