import type { NewQueuedRun } from "../checkpoints/run-queue.ts";
import { RunAborted } from "../errors/classify.ts";
import type { Logger } from "../observability/logger.ts";

/** A run a worker has claimed from the queue: what it needs to execute it. */
export interface ClaimedRun {
  readonly runId: string;
  readonly userId: string;
  readonly threadId: string;
  /** Claims of this run that counted (1 on its first start; a hand-back or a wait for a busy thread does not count). */
  readonly attempt: number;
  /** Who asked for it, as the engine keeps it (JSON). */
  readonly caller: Record<string, unknown>;
  /** The thread's latest checkpoint when the run first started ("" for none); null before it started. */
  readonly base: string | null;
}

/** One execution of a claimed run, as its engine controls it. */
export interface Execution {
  /** Aborted when the engine takes the run away: the worker drains (hand-back) or lost its claim. */
  readonly control: AbortController;
  /**
   * Whether this execution records how the run ended, asked once its events have ended: false once
   * it is handed back or lost. The engine confirms its claim first (renewing it): an attempt that was
   * away past its lease learns here that another attempt has the run, should the failed renewal not
   * have told it yet.
   */
  writesEnd(): Promise<boolean>;
  /** Whether the run is being handed back to the queue (it is pending again, not ended). */
  handingBack(): boolean;
  /** Whether the engine has taken the run from this execution: handed back, or lost to another attempt. */
  takenAway(): boolean;
  /**
   * The run starts: this attempt holds its thread and has written nothing yet. The first start notes
   * the thread's latest checkpoint (`base`). From here on the run is executing: it can no longer be
   * taken out of the queue, only cancelled. False when the run is no longer this worker's (another
   * took it over, or it was taken out of the queue while this attempt waited for its thread).
   */
  started(base: string): Promise<boolean>;
}

/**
 * How an execution left its run: `done` (it reached its final status: out of the queue) or `busy`
 * (its thread was held by another run: back to the queue, shortly, without counting an attempt).
 */
export type ExecutionOutcome = "done" | "busy";

export type Execute = (run: ClaimedRun, execution: Execution) => Promise<ExecutionOutcome>;

/**
 * Where accepted background runs wait and how workers take them: the checkpoint database's run queue
 * (one host without Redis, or PostgreSQL; src/background/database-engine.ts) or BullMQ over REDIS_URL
 * (src/background/bullmq-engine.ts). Both keep an accepted run until it reaches a final status, give
 * a run whose worker died to another worker with its attempt counted, start a delayed run when it is
 * due, and start the runs of one thread one at a time, in the order they were accepted.
 */
export interface RunQueueEngine {
  /** Which engine this is, for logs and metrics ("database" or "bullmq"). */
  readonly name: string;
  add(run: NewQueuedRun): Promise<void>;
  /** The thread's runs still in the queue (waiting or executing), in order. */
  onThread(userId: string, threadId: string): Promise<string[]>;
  /** Take a run out of the queue before it started (Execution.started); false when it is executing or gone. */
  removeQueued(runId: string): Promise<boolean>;
  /** Runs waiting (due or not) and executing, across every worker. */
  depth(): Promise<{ readonly waiting: number; readonly executing: number }>;
  /** Start executing claimed runs with `execute`, at most `slots` at once on this worker. */
  start(execute: Execute, slots: number): void;
  /** Look for runs now (one was just accepted here). */
  wake(): void;
  /** Take no more runs. */
  stopClaiming(): void;
  /** Stop the runs executing here and give them back to the queue, to continue elsewhere. */
  handBack(): Promise<void>;
  close(): Promise<void>;
}

/** An engine's hold on one run it executes, as far as losing it or giving it back goes. */
export interface LosableRun {
  readonly control: AbortController;
  /** The run is another attempt's now: this one writes nothing of its end. */
  lost: boolean;
  /** The run is being handed back to the queue (it is pending again, not ended). */
  handingBack: boolean;
  /** This attempt writes the run's end (confirmEnd said so): a hand-back lets it finish instead. */
  ending: boolean;
}

/**
 * The run's lease ran out while its worker was away (its renewal failed, or the run was claimed
 * again): the attempt stops here, and leaves the run's end to the attempt that has it now. Once.
 */
export function loseRun(held: LosableRun, runId: string, logger: Logger): void {
  if (held.lost) return;
  held.lost = true;
  logger.warn({ run_id: runId }, "background run lost its lease: another attempt takes it over");
  held.control.abort(new RunAborted("lock_lost"));
}

/**
 * Execution.writesEnd of an engine: false once the run is handed back or lost; else its claim is
 * confirmed by `renew` (false: another attempt has it, and the run is lost here). A store that does
 * not answer says nothing: the end is written, and its own write finds out.
 */
export async function confirmEnd(held: LosableRun, renew: () => Promise<boolean>, runId: string, logger: Logger): Promise<boolean> {
  if (held.handingBack || held.lost) return false;
  if (!(await renew().catch(() => true))) loseRun(held, runId, logger);
  held.ending = !held.handingBack && !held.lost;
  return held.ending;
}

/**
 * Execution.handingBack and takenAway of an engine's hold: a run lost to another attempt is not this
 * one's to give back, whatever came first.
 */
export function executionState(held: LosableRun): Pick<Execution, "handingBack" | "takenAway"> {
  return { handingBack: () => held.handingBack && !held.lost, takenAway: () => held.handingBack || held.lost };
}

/**
 * Stop a held run to give it back to the queue as its worker drains: it is pending again, and an
 * attempt elsewhere continues it. A run whose end this attempt writes (confirmEnd) is over: it is
 * left to finish here, so its end is not undone (its record set back to pending, the run queued again);
 * so is one stopped already (a cancel, its deadline), which ends as that; one lost to another attempt is
 * that attempt's, and stays as it is.
 */
export function handBackRun(held: LosableRun): void {
  // Stopped already (cancelled, past its deadline, lost): it ends as that, here, not elsewhere again.
  if (held.ending || held.lost || held.control.signal.aborted) return;
  held.handingBack = true;
  held.control.abort(new RunAborted("shutdown"));
}
