import type { ErrorKind } from "./api-error.ts";

/** The failures operations of the route table share, named once for both APIs' entries. */

/** Failures of taking a conversation's lock. */
export const LOCK_ERRORS = ["conversation_busy", "conversation_queue_timeout", "lock_unavailable"] as const satisfies readonly ErrorKind[];

/** Failures of reading a conversation back. */
export const STORAGE_ERRORS = ["conversation_unreadable", "database_unavailable"] as const satisfies readonly ErrorKind[];

/** A conversation addressed for a user the token may not act for. */
export const ADDRESS_ERRORS = ["forbidden_user"] as const satisfies readonly ErrorKind[];

/** A user's fair share refusing a run (FAIR_SHARE_*): the request one too many, the day's tokens spent, every run slot taken. */
export const FAIR_SHARE_ERRORS = ["user_rate_limit", "user_token_budget", "user_run_limit"] as const satisfies readonly ErrorKind[];

/** What refuses a run before it starts (a stream reports anything later as an error event). */
export const RUN_START_ERRORS = [...ADDRESS_ERRORS, ...FAIR_SHARE_ERRORS, ...LOCK_ERRORS, ...STORAGE_ERRORS, "conversation_too_long"] as const satisfies readonly ErrorKind[];

/** What ends a run once it started, beyond what refuses it: the model's and the run's own failures. */
const RUN_FAILURES = [
  "recursion_limit_requested",
  "recursion_limit",
  "model_authentication_failed",
  "model_rate_limited",
  "model_timeout",
  "model_unavailable",
  "model_request_rejected",
  "run_cancelled",
  "run_failed",
] as const satisfies readonly ErrorKind[];

/** What ends a run that was answered in one piece. */
export const RUN_ERRORS = [...RUN_START_ERRORS, ...RUN_FAILURES] as const satisfies readonly ErrorKind[];
