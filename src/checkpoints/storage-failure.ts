import { ServiceError } from "../errors/service-error.ts";
import { isDatabaseError } from "./database-errors.ts";
import { UnreadableCheckpointError } from "./readable-serde.ts";

/** An UnreadableCheckpointError anywhere in the error's cause chain. */
function isUnreadableConversation(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 5; depth++) {
    if (e instanceof UnreadableCheckpointError) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * Storage failures, in a run or outside one (history read, append, clear): an unreadable
 * conversation, or a failure of the checkpoint database (DatabaseUnavailableError from the storage
 * layer, or a driver's error that reached here another way). Undefined when the error is neither.
 */
export function classifyStorageError(error: unknown): ServiceError | undefined {
  if (isUnreadableConversation(error)) return new ServiceError("conversation_unreadable");
  return isDatabaseError(error) ? new ServiceError("database_unavailable") : undefined;
}
