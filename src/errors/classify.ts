/** Why a run's AbortSignal fired. Carried as the signal's reason. */
export class RunAborted extends Error {
  constructor(readonly reason: "deadline" | "client_disconnected" | "lock_lost" | "shutdown" | "cancelled") {
    super(`run aborted: ${reason}`);
    this.name = "RunAborted";
  }
}
