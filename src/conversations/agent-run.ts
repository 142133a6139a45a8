import type { RunTicket } from "../admission/fair-share.ts";
import type { ChatMessage, StreamEvent } from "../contract/messages.ts";
import type { ServiceError } from "../errors/service-error.ts";
import type { Logger } from "../observability/logger.ts";
import type { ServiceMetrics } from "../observability/metrics.ts";
import type { RunTrace, Tracing } from "../observability/tracing.ts";
import type { PreparedRun } from "../runs/prepare.ts";
import type { Conversation } from "./conversation-service.ts";
import { messageEvents, RunFailure, type RunExecutor, type RunStream, type Turns, type UnderLock } from "./turns.ts";

/** Where runs report how they ended, built once by the app. */
export interface RunReporting {
  readonly metrics: ServiceMetrics;
  readonly tracing: Tracing | undefined;
  /**
   * The outcome label of a run that ended in `error` (what a RunFailure reports, or a refusal): the
   * error code the API answers it with, which only the layer that owns the catalogue knows.
   */
  readonly outcomeOf: (error: unknown) => string;
}

/**
 * A run's events as its consumer reads them. A consumer that stops before they end (its client left,
 * or did not keep up) ends the run with what it saw; `finished` says whether the run itself had
 * finished cleanly by then (its last message may still have been on its way).
 */
export interface RunEvents<E = StreamEvent> extends RunStream<E> {
  end(outcome: string): void;
}

/**
 * How a run is admitted under its user's fair share (src/admission/fair-share.ts) as it starts,
 * before its conversation lock: a refusal is thrown, else the ticket the run gives back as it ends
 * (undefined: no limit applies to the user).
 */
export type RunAdmission = () => Promise<RunTicket | undefined>;

/** How loudly a run that did not end with its answer is logged: a client that left is no failure of ours. */
function levelOf(error: ServiceError): "info" | "warn" | "error" {
  if (error.kind === "client_disconnected") return "info";
  return error.refusal || error.kind === "request_timeout" ? "warn" : "error";
}

/**
 * One run of an agent on a conversation, from its preparation to its end, whoever asked for it (an
 * invoke, a stream, a resumable stream). It takes the conversation's lock, executes under its own
 * span (tracing on), and ends exactly once with one outcome: `ok`, the error code of its failure, or
 * what its consumer saw (`client_disconnected`, `slow_consumer`). That one end counts and times it
 * (agenthost_runs_total, agenthost_run_duration_seconds), ends its span and logs a failure; a second
 * end is ignored, so every path may report what it saw and the first word stands.
 *
 * A run refused before it started (its user's fair share, a busy conversation, a full one, nothing
 * pending to resume) is no run: the refusal is thrown as a ServiceError, its span ends with the
 * refusal's code, and nothing is counted. A run admitted under its user's fair share holds its ticket
 * from before its lock until it lets the conversation go, and reports the tokens it used through it.
 */
export class AgentRun {
  /** The graph began executing: it may have stored steps (an Idempotency-Key then keeps whatever it answers). */
  executed = false;
  private outcome: string | undefined;
  private trace: RunTrace | undefined;

  constructor(
    private readonly turns: Turns,
    private readonly reporting: RunReporting,
    readonly conversation: Conversation,
    readonly prepared: PreparedRun,
    /** The run's one controller: its deadline, its client's departure, a cancel or a lost lock abort it. */
    readonly control: AbortController,
    private readonly underLock: UnderLock | undefined,
    private readonly logger: Logger,
    /** Its user's fair share; undefined when fair share is off. */
    private readonly admission?: RunAdmission,
  ) {}

  get id(): string {
    return this.prepared.runId;
  }

  get agentName(): string {
    return this.prepared.agent.name;
  }

  /** Whether the run has ended, and how. */
  get ended(): string | undefined {
    return this.outcome;
  }

  /** Run to the end and return the final message; a failure is thrown as its ServiceError. */
  async answer(): Promise<ChatMessage> {
    let message: ChatMessage;
    try {
      const { admission } = this;
      message = await this.started(() =>
        admission ? this.invokedAdmitted(admission) : this.turns.invoke(this.conversation, this.prepared, this.control, this.underLock),
      );
    } catch (thrown) {
      throw this.failed(thrown);
    }
    this.executed = true;
    this.end("ok");
    this.reporting.metrics.countTokens(this.agentName, message);
    return message;
  }

  /**
   * Take the lock and check the conversation, then hand back the run's events: everything that refuses
   * the run is thrown from here, before a single event exists. The run ends `ok` when its events end
   * cleanly, with its failure's code when they end in one (thrown on as its RunFailure, for the
   * consumer to report in its own framing); a consumer that stops reading first ends it itself
   * (end()). Each message's tokens are counted as it passes.
   */
  async events(tokens: boolean): Promise<RunEvents> {
    const { metrics } = this.reporting;
    return this.streamed(messageEvents(tokens), (event) => {
      if (event.type === "message") metrics.countTokens(this.agentName, event.content);
    });
  }

  /**
   * The same for any executor (the LangGraph Platform API's chunks): `observe` sees each event as
   * it passes.
   */
  async streamed<E>(executor: RunExecutor<E>, observe?: (event: E) => void): Promise<RunEvents<E>> {
    let stream: RunStream<E>;
    let ticket: RunTicket | undefined;
    try {
      const { admission } = this;
      stream = await this.started(() =>
        admission
          ? this.streamedAdmitted(admission, executor, (admitted) => (ticket = admitted))
          : this.turns.stream(this.conversation, this.prepared, this.control, executor, this.underLock),
      );
    } catch (thrown) {
      throw this.failed(thrown);
    }
    this.executed = true;
    const events = this.observed(stream, observe, ticket);
    return new ObservedStream(this, stream, this.trace ? this.trace.bindEvents(events) : events);
  }

  /** End the run with `outcome`, unless it has ended already. */
  end(outcome: string): void {
    if (this.outcome !== undefined) return;
    this.outcome = outcome;
    this.reporting.metrics.countRun(this.agentName, outcome, this.prepared.preparedAt);
    this.trace?.end(outcome);
  }

  /** Invoke under the user's fair share: admitted first, the ticket given back once the conversation is free, before the answer is handed over. */
  private async invokedAdmitted(admission: RunAdmission): Promise<ChatMessage> {
    const ticket = await admission();
    try {
      return await this.turns.invoke(this.conversation, this.metered(ticket), this.control, this.underLock);
    } finally {
      if (ticket) await ticket.release();
    }
  }

  /** Stream under the user's fair share: admitted first; the ticket is kept until the events end (`observed`), or given back if the run is refused. */
  private async streamedAdmitted<E>(admission: RunAdmission, executor: RunExecutor<E>, keep: (ticket: RunTicket | undefined) => void): Promise<RunStream<E>> {
    const ticket = await admission();
    keep(ticket);
    try {
      return await this.turns.stream(this.conversation, this.metered(ticket), this.control, executor, this.underLock);
    } catch (error) {
      if (ticket) await ticket.release();
      throw error;
    }
  }

  /** The run as its turn executes it: reporting its tokens to the ticket when the user's tokens are counted. */
  private metered(ticket: RunTicket | undefined): AgentRun["prepared"] {
    if (!ticket?.countsTokens) return this.prepared;
    return { ...this.prepared, usage: (tokens) => ticket.charge(tokens) };
  }

  /** Start the run's span (tracing on) and run `work` under it. */
  private started<T>(work: () => Promise<T>): Promise<T> {
    const { tracing } = this.reporting;
    if (!tracing) return work();
    this.trace = tracing.startRun(this.prepared);
    return this.trace.within(work);
  }

  /**
   * What a run that did not answer reports: a refusal before it started ends only its span; a failure
   * of the run itself is logged and ends the run with its code. Returns the ServiceError to throw on.
   */
  private failed(thrown: unknown): unknown {
    if (!(thrown instanceof RunFailure)) {
      this.trace?.end(this.reporting.outcomeOf(thrown));
      return thrown;
    }
    if (thrown.executed) this.executed = true;
    this.report(thrown);
    return thrown.error;
  }

  /** Log a failure of the run (without its error text, which never leaves the service) and end the run with its code. */
  private report(failure: RunFailure): void {
    const outcome = this.reporting.outcomeOf(failure.error);
    this.logger[levelOf(failure.error)](
      { run_id: this.id, agent: this.agentName, error_code: outcome, cause_type: (failure.cause as Error | undefined)?.name },
      "run failed",
    );
    this.end(outcome);
  }

  /**
   * The turn's events, observed. A fair-share ticket is given back as the run lets its conversation
   * go: once the turn reports the run finished (it frees the conversation before it hands over the
   * last event), or however the events end.
   */
  private async *observed<E>(
    stream: RunStream<E>,
    observe: ((event: E) => void) | undefined,
    ticket: RunTicket | undefined,
  ): AsyncGenerator<E, void, undefined> {
    try {
      for await (const event of stream.events) {
        if (ticket !== undefined && stream.finished) await ticket.release();
        observe?.(event);
        yield event;
      }
    } catch (thrown) {
      if (thrown instanceof RunFailure) this.report(thrown);
      throw thrown;
    } finally {
      if (ticket) await ticket.release();
    }
    this.end("ok");
  }
}

/** A run's events as its consumer reads them: the turn's stream, observed by the run. A class: see RequestInput in http/mount-operations.ts. */
class ObservedStream<E> implements RunEvents<E> {
  constructor(
    private readonly owner: AgentRun,
    private readonly inner: RunStream<E>,
    readonly events: RunStream<E>["events"],
  ) {}

  end(outcome: string): void {
    this.owner.end(outcome);
  }

  get run(): RunStream<E>["run"] {
    return this.inner.run;
  }

  get finished(): boolean {
    return this.inner.finished;
  }
}
