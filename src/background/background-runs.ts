import { randomUUID } from "node:crypto";
import type { FairShare } from "../admission/fair-share.ts";
import type { Principal } from "../auth/principal.ts";
import { FINISHED, type PlatformRecords, type PlatformRun, type RunStatus } from "../checkpoints/platform-records.ts";
import type { Config } from "../config/schema.ts";
import type { RunCreateRequest } from "../contract/platform.ts";
import type { RunCanceller } from "../coordination/cancel/run-canceller.ts";
import type { RecordedEvent } from "../coordination/run-events/event-log.ts";
import type { Conversation } from "../conversations/conversation-service.ts";
import type { StreamLogs } from "../coordination/run-events/stream-logs.ts";
import { RunAborted } from "../errors/classify.ts";
import { ServiceError } from "../errors/service-error.ts";
import type { Logger } from "../observability/logger.ts";
import type { ServiceMetrics } from "../observability/metrics.ts";
import type { Tracing } from "../observability/tracing.ts";
import { assistantIdOf } from "../platform/assistants.ts";
import { refuseUnserved, wireRun, type PlatformRuns, type WireRun } from "../platform/platform-runs.ts";
import type { PlatformCaller, PlatformThreads } from "../platform/platform-threads.ts";
import type { BackgroundWork } from "../runs/background-work.ts";
import type { ClaimedRun, Execution, ExecutionOutcome, RunQueueEngine } from "./run-queue-engine.ts";
import { webhookPayload, WebhookSender, type WebhookError } from "./webhook-delivery.ts";
import { checkWebhookUrl } from "./webhook-target.ts";

export interface BackgroundRunsDependencies {
  readonly config: Config;
  readonly threads: PlatformThreads;
  readonly records: PlatformRecords;
  readonly queue: RunQueueEngine;
  readonly runs: PlatformRuns;
  readonly canceller: RunCanceller;
  readonly streamLogs: StreamLogs;
  readonly logger: Logger;
  readonly metrics: ServiceMetrics;
  readonly tracing: Tracing | undefined;
  /** The error events a failed run's record ends with, as a Platform stream writes them. */
  readonly failureEvents: (thrown: unknown, logger: Logger) => unknown[];
  /** Each user's fair share: a run's request and day of tokens checked as it is accepted, a run slot as it executes. */
  readonly fairShare?: FairShare;
}

/** What the queue keeps of who asked for a run: it executes as them, wherever it is claimed. */
interface QueuedCaller {
  readonly principal: Principal;
  readonly namedUser: string | null;
  /** A stateless run (POST /runs): its thread is its own. */
  readonly stateless: boolean;
  /** The `traceparent` of the request that accepted it (tracing on). */
  readonly createdBy?: string | undefined;
  /** When it was accepted, milliseconds since the epoch. */
  readonly acceptedAt?: number;
}

/** How long a claimed run with no record yet is looked at again before it counts as never accepted. */
const UNRECORDED_GRACE_MS = 60_000;

/** The run's claim went to another worker, or the run out of the queue, before this attempt started it. */
class RunTakenOver extends Error {}

/**
 * Background runs (`POST /threads/{thread_id}/runs`, `POST /runs`): accepted at once into the
 * queue (the checkpoint database's run queue), then executed by whichever worker claims them, as a
 * Platform run of the caller with no client: the same lock, record, events log (so `/stream` follows
 * it and `/join` waits for it), metrics and span as any run, bounded by BACKGROUND_RUN_TIMEOUT.
 *
 * Each worker executes at most BACKGROUND_RUNS_PER_WORKER at once, beside its HTTP slots. It claims
 * a run as soon as one is accepted on it or one of its own ends, and every BACKGROUND_POLL_INTERVAL
 * (runs accepted elsewhere, delayed runs coming due, runs whose worker died). A claim is a lease,
 * renewed while the run executes; a worker that dies leaves its lease to run out, and the run is
 * claimed again (its attempt counted) and continues from its last checkpoint: the steps it completed
 * never run again, the step that was running when the worker died runs again. A run claimed more than
 * BACKGROUND_RUN_MAX_ATTEMPTS times ends `error`. A draining worker stops claiming, and hands back
 * the runs still executing when its grace ends; they continue elsewhere.
 *
 * Under a user's fair share, a run is refused (429) as it is accepted when its request is one too
 * many this minute or the user's tokens of the day are spent; it takes one of the user's run slots
 * only while it executes, and one claimed while the user is at the run limit goes back to the queue
 * like a run whose thread is busy.
 */
export class BackgroundRuns implements BackgroundWork {
  /** Completion webhooks of the runs this worker ends (signed, retried; lost if the worker dies). */
  private readonly webhooks: WebhookSender;

  constructor(private readonly deps: BackgroundRunsDependencies) {
    this.webhooks = new WebhookSender({ settings: deps.config, logger: deps.logger });
    deps.queue.start((run, execution) => this.execute(run, execution), deps.config.BACKGROUND_RUNS_PER_WORKER);
    deps.metrics.backgroundQueueDepth = async () => (await deps.queue.depth()).waiting;
    deps.logger.info({ engine: deps.queue.name, slots: deps.config.BACKGROUND_RUNS_PER_WORKER }, "background runs: taking runs");
  }

  /**
   * Accept a background run of `body` on the caller's thread `threadId` (undefined: a stateless run
   * on a thread of its own): recorded `pending` and queued, to start after `after_seconds`. The
   * thread's multitask strategy applies now: `reject` (the default) refuses when the thread has a run
   * pending or running (409 conversation_busy); `interrupt` and `rollback` make room first (see
   * `makeRoom`); `enqueue` queues the run behind them.
   */
  async create(caller: PlatformCaller, threadId: string | undefined, body: RunCreateRequest, logger: Logger, control: AbortController): Promise<WireRun> {
    refuseUnserved(body, true);
    if (body.webhook) checkWebhookUrl(body.webhook, this.deps.config);
    const { records, queue, runs, fairShare } = this.deps;
    // Before anything is stored or stopped: a trusted caller's request counted, the user's day of tokens checked.
    if (fairShare?.on) await fairShare.accept({ user: this.deps.threads.userOf(caller), countsRequest: caller.principal.boundUserId === undefined });
    const { conversation, stateless, created } = await runs.placed(caller, threadId, body);
    const { userId, threadId: thread } = conversation;
    const strategy = body.multitask_strategy ?? "reject";
    // A thread this request has just made has no runs to refuse it or make room from.
    const waiting = created ? [] : await queue.onThread(userId, thread);
    if (waiting.length > 0 && strategy === "reject" && (await this.unfinished(userId, thread, waiting))) {
      throw new ServiceError("conversation_busy", { detail: "The thread has a run pending or running; wait for it, or send multitask_strategy enqueue or interrupt." });
    }
    if (strategy === "interrupt" || strategy === "rollback") await this.makeRoom(conversation, strategy, control);
    const now = Date.now();
    const record: PlatformRun = {
      userId,
      threadId: thread,
      runId: randomUUID(),
      agentId: conversation.agent.name,
      status: "pending",
      metadata: body.metadata ?? {},
      kwargs: JSON.parse(JSON.stringify(body)) as Record<string, unknown>,
      multitaskStrategy: strategy,
      createdAt: now,
      updatedAt: now,
    };
    const queued: QueuedCaller = {
      principal: caller.principal,
      namedUser: caller.namedUser ?? null,
      stateless,
      createdBy: this.deps.tracing?.traceparent(),
      acceptedAt: now,
    };
    // Queued first, then recorded: a worker that dies between the two leaves a queue entry with no
    // record, which is dropped when claimed (its client got no answer), never a record that stays
    // `pending` with nothing queued.
    await queue.add({
      runId: record.runId,
      userId,
      threadId: thread,
      availableAt: now + Math.round((body.after_seconds ?? 0) * 1000),
      caller: queued as unknown as Record<string, unknown>,
    });
    await records.putRun(record);
    logger.info({ run_id: record.runId, thread_id: thread, agent: record.agentId, after_seconds: body.after_seconds ?? 0 }, "background run accepted");
    this.deps.queue.wake();
    return wireRun(record, assistantIdOf(record.agentId));
  }

  /**
   * Whether any of these runs of the thread's queue has not ended. One that has ended (its record
   * final, which its client joining it saw) is only on its way out of the queue: it does not make
   * the thread busy. A queue entry with no record counts as not ended.
   */
  private async unfinished(userId: string, threadId: string, runIds: readonly string[]): Promise<boolean> {
    for (const runId of runIds) {
      const run = await this.deps.records.getRun(userId, threadId, runId);
      if (!run || !FINISHED.has(run.status)) return true;
    }
    return false;
  }

  /**
   * Before a run with multitask strategy `interrupt` or `rollback` (of either kind, background or
   * not): the runs already on its thread stop. Queued ones leave the queue; the executing one (and
   * any run of agenthost's own API holding the conversation) is cancelled wherever it runs. With
   * `interrupt` each ends `interrupted`, its completed steps kept. With `rollback` they are deleted,
   * and the thread is taken back to where the executing one found it (PlatformThreads.rollBack),
   * once it has let go of the thread: as if none of them had run.
   */
  async makeRoom(conversation: Conversation, strategy: "interrupt" | "rollback", control: AbortController): Promise<void> {
    const { records, queue } = this.deps;
    const { userId, threadId } = conversation;
    const executing = new Set<string>();
    for (const runId of await queue.onThread(userId, threadId)) {
      if (!(await this.dropQueued(userId, threadId, runId, strategy))) executing.add(runId);
    }
    await this.deps.canceller.cancel(conversation.storageKey);
    if (strategy !== "rollback") return;
    // Runs of the other kinds (streamed, waited) are found by their records.
    for (const run of await records.listRuns(userId, threadId, { offset: 0, limit: 100, status: "running" })) executing.add(run.runId);
    const stopped: PlatformRun[] = [];
    for (const runId of executing) {
      const run = await records.getRun(userId, threadId, runId);
      if (run) stopped.push(run);
    }
    if (stopped.length) await this.deps.threads.rollBack(conversation, stopped, control);
  }

  /**
   * Cancel a run: one still queued ends `interrupted` at once; one executing is stopped wherever it
   * runs (and ends `interrupted`). With `rollback` the run is deleted instead, and once it has
   * stopped its thread is taken back to where it found it (the request waits for that). Returns false
   * when the run had ended already.
   */
  async cancel(run: PlatformRun, conversation: Conversation, action: "interrupt" | "rollback", control: AbortController): Promise<boolean> {
    if (FINISHED.has(run.status)) return false;
    if (await this.dropQueued(run.userId, run.threadId, run.runId, action)) return true;
    await this.deps.canceller.cancel(conversation.storageKey);
    if (action === "rollback") await this.deps.threads.rollBack(conversation, [run], control);
    return true;
  }

  /**
   * Take a run that has not started out of the queue: with `rollback` its record is deleted, else it
   * ends `interrupted`. False when it has started (or is gone from the queue).
   */
  private async dropQueued(userId: string, threadId: string, runId: string, action: "interrupt" | "rollback"): Promise<boolean> {
    const { records, queue } = this.deps;
    if (!(await queue.removeQueued(runId))) return false;
    // One whose end is written already (it was queued again as its worker drained) only leaves the queue.
    const run = await records.getRun(userId, threadId, runId);
    if (!run || FINISHED.has(run.status)) return true;
    if (action === "rollback") await records.deleteRun(userId, threadId, runId);
    else this.notify(await records.setRunStatus(userId, threadId, runId, "interrupted", Date.now()));
    this.deps.runs.recorded(runId, action === "rollback" ? undefined : "interrupted");
    return true;
  }

  /** Execute a claimed run within BACKGROUND_RUN_TIMEOUT; a failure outside the run itself is logged, and the run left to its queue. */
  private async execute(run: ClaimedRun, execution: Execution): Promise<ExecutionOutcome> {
    const log = this.deps.logger.child({ run_id: run.runId, thread_id: run.threadId, attempt: run.attempt });
    const deadline = setTimeout(() => execution.control.abort(new RunAborted("deadline")), this.deps.config.BACKGROUND_RUN_TIMEOUT * 1000);
    const { metrics } = this.deps;
    metrics.backgroundExecuting.inc();
    if (run.attempt > 1) metrics.backgroundRetries.inc();
    try {
      const outcome = await this.executed(run, execution, log);
      // Pending again, unless it reached its final status on the way (one already final when it was
      // claimed, or ended before it could start): that stays, and its next claim drops it.
      if (execution.handingBack() && (await this.deps.records.runHandedBack(run.userId, run.threadId, run.runId, Date.now()))) {
        log.info("background run handed back");
      }
      return outcome;
    } catch (error) {
      log.error({ err_type: (error as Error).name }, "background run failed outside its run");
      return "done";
    } finally {
      clearTimeout(deadline);
      metrics.backgroundExecuting.dec();
    }
  }

  private async executed(entry: ClaimedRun, execution: Execution, log: Logger): Promise<ExecutionOutcome> {
    const { records, runs, streamLogs, config } = this.deps;
    const { userId, threadId, runId } = entry;
    const queued = entry.caller as unknown as QueuedCaller;
    const found = await records.getRunWithThread(userId, threadId, runId);
    // Claimed between its queueing and its record: look again shortly. Long without one: its
    // accepting worker died in between, and nobody was told of it.
    if (!found) return Date.now() - (queued.acceptedAt ?? 0) < UNRECORDED_GRACE_MS ? "busy" : "done";
    const record = found.run;
    if (FINISHED.has(record.status)) return "done";
    const caller: PlatformCaller = { principal: queued.principal, namedUser: queued.namedUser ?? undefined };
    const ended = async (status: RunStatus, error?: WebhookError) => {
      this.deps.metrics.backgroundRuns.inc({ status });
      this.notify(await records.setRunStatus(userId, threadId, runId, status, Date.now()), { error });
      await records.updateThread(userId, threadId, { status: status === "error" ? "error" : "idle", now: Date.now() });
      runs.recorded(runId, status);
    };
    if (entry.attempt > config.BACKGROUND_RUN_MAX_ATTEMPTS) {
      log.error({ max_attempts: config.BACKGROUND_RUN_MAX_ATTEMPTS }, "background run given up: its workers stopped on every attempt");
      await ended("error", { error: "run_failed", message: "The run was stopped on every attempt: the workers executing it kept stopping." });
      return "done";
    }
    const request = record.kwargs as unknown as RunCreateRequest;
    // Asked by the run's recorder as it ends and below: one confirmation of the claim, one answer.
    let writes: Promise<boolean> | undefined;
    const writesEnd = () => (writes ??= execution.writesEnd());
    let handle;
    let events;
    // Set when the run turns out, under its thread's lock, to be no longer this attempt's: the error
    // it throws there reaches this catch classified as the run's failure.
    let takenOver = false;
    const started = async (base: string) => {
      // A run claimed again after its worker stopped or lost its lease: that worker may have ended it
      // since the record was read above (it came back in time), and the thread's lock is this
      // attempt's only once that worker let go of it. Read again here, on retries only.
      const now = entry.attempt > 1 ? await records.getRun(userId, threadId, runId) : record;
      if (now && !FINISHED.has(now.status) && (await execution.started(base))) return;
      takenOver = true;
      throw new RunTakenOver();
    };
    try {
      const body = await this.continued(caller, entry, request);
      const background = { runId, attempt: entry.attempt, createdAt: record.createdAt, createdBy: queued.createdBy, writesEnd, started };
      handle = await runs.create(caller, threadId, { ...body, multitask_strategy: undefined }, execution.control, log, { background, thread: found.thread });
      events = await handle.events();
    } catch (error) {
      // A run of the other API holds the conversation, or its user has as many runs as their fair
      // share allows: wait in the queue, without counting an attempt.
      if (error instanceof ServiceError && (error.kind === "conversation_busy" || error.kind === "user_run_limit")) {
        if (error.kind === "user_run_limit") log.debug({ user_id: userId }, "background run waits for a run slot of its user");
        return "busy";
      }
      // Stopped by its engine before it started (handed back as the worker drains, or lost to another
      // attempt): whatever the refusal says, the run's end is not this attempt's to write.
      if (takenOver || execution.takenAway()) return "done";
      log.warn({ error_code: error instanceof ServiceError ? error.kind : "error" }, "background run refused");
      await ended("error", this.errorOf(error, log));
      return "done";
    }
    log.info({ agent: record.agentId }, entry.attempt > 1 ? "background run resumed" : "background run started");
    if (entry.attempt === 1) {
      const due = record.createdAt + Math.round((request.after_seconds ?? 0) * 1000);
      this.deps.metrics.backgroundQueueWait.observe(Math.max(0, Date.now() - due) / 1000);
    }
    const writer = streamLogs.open(runId, handle.run.prepared.storageKey, userId);
    const startedAt = Date.now();
    let failure: WebhookError | undefined;
    let thrown: { readonly error: unknown } | undefined;
    try {
      for await (const event of events.events) writer.append(event as unknown as RecordedEvent);
    } catch (error) {
      thrown = { error };
    }
    const owns = await writesEnd();
    if (!owns) {
      // Handed back or taken over: the run's events and record are its next execution's.
      writer.abandon();
    } else if (thrown) {
      const failed = this.deps.failureEvents(thrown.error, log);
      for (const event of failed) writer.append(event as RecordedEvent);
      writer.end(false);
      failure = (failed.at(-1) as { data?: WebhookError } | undefined)?.data;
    } else {
      writer.end(true);
    }
    if (owns) {
      // The status the run wrote as it ended; the record is read again only for a webhook (which
      // sends it) or when that write failed. Read, no record is a rollback having deleted it (a
      // failed read counts as an error); not read, a rolled-back run counts as it ended, interrupted.
      const written = handle.outcome.status;
      const final = request.webhook || written === undefined ? await records.getRun(userId, threadId, runId).catch(() => null) : undefined;
      const status = written ?? (final === null ? "error" : final?.status);
      if (status && FINISHED.has(status)) this.deps.metrics.backgroundRuns.inc({ status });
      log.info({ outcome: handle.run.ended ?? "unknown", status: status ?? "rolled back" }, "background run ended");
      if (request.webhook && final) {
        const values = (await this.deps.threads.stateOf(caller, found.thread).catch(() => undefined))?.values;
        const error = status === "error" || status === "timeout" ? failure : undefined;
        this.notify(final, { values, error, startedAt, endedAt: Date.now() });
      }
      if (queued.stateless && request.on_completion !== "keep") {
        await this.deps.threads.delete(caller, threadId, new AbortController()).catch(() => undefined);
      }
    }
    return "done";
  }

  /**
   * What this attempt runs. The first runs the request (its start notes the thread's latest
   * checkpoint under the lock, Execution.started); a run claimed again (its worker died, or was
   * drained) that finds a newer one there wrote it (runs of a thread go one at a time), so it
   * continues from it: its input is in the thread already. One that finds the same starts over
   * with its input.
   */
  private async continued(caller: PlatformCaller, entry: ClaimedRun, request: RunCreateRequest): Promise<RunCreateRequest> {
    if (entry.base === null) return request;
    const head = (await this.deps.threads.latestCheckpoint(caller, entry.threadId)) ?? "";
    if (head === entry.base) return request;
    return { ...request, input: null, command: undefined, checkpoint: undefined, checkpoint_id: undefined };
  }

  /** The error a refused run's webhook reports: its code and the catalogue's words. */
  private errorOf(thrown: unknown, log: Logger): WebhookError | undefined {
    return (this.deps.failureEvents(thrown, log).at(-1) as { data?: WebhookError } | undefined)?.data;
  }

  /** Send the run's webhook, if it asked for one and has ended (queued runs cancelled included). */
  private notify(run: PlatformRun | undefined, end: Parameters<typeof webhookPayload>[1] = {}): void {
    const url = (run?.kwargs as { webhook?: unknown } | undefined)?.webhook;
    if (!run || typeof url !== "string" || !FINISHED.has(run.status)) return;
    this.webhooks.send(url, webhookPayload(wireRun(run, assistantIdOf(run.agentId)), end));
  }

  stopClaiming(): void {
    this.deps.queue.stopClaiming();
  }

  async handBack(): Promise<void> {
    await this.deps.queue.handBack();
    await this.webhooks.close();
  }
}
