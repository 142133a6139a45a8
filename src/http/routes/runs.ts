import { Router, type Request, type Response } from "express";
import type { RegisteredAgent } from "../../agents/agent.ts";
import { ApiError } from "../../errors/api-error.ts";
import { classifyRunError, RunAborted } from "../../errors/classify.ts";
import type { LockLease } from "../../admission/locks/conversation-lock.ts";
import { conversationHead, ensureRoomForRun, forgetUnsavedChanges, type ConversationHead } from "../../checkpoints/history.ts";
import { invokeRun, streamRun } from "../../runs/execute.ts";
import { resumeFromInput } from "../../runs/interrupts.ts";
import { prepareRun, type PreparedRun } from "../../runs/prepare.ts";
import type { Runtime } from "../../runtime.ts";
import { encodeJsonlEvent } from "../encoders/jsonl.ts";
import { encodeSseEvent, SSE_DONE, SSE_KEEPALIVE } from "../encoders/sse.ts";
import { principalOf, scopeOf, signalOf } from "../request-scope.ts";
import { shadowingKeyPath } from "../json-bounds.ts";
import { describeIssues, invokeRequestSchema, streamRequestSchema, type StreamEvent } from "../schemas.ts";
import type { z } from "zod";

/** Resolve `{/:agentId}`: the named agent, or the default agent when the segment is absent. */
export function agentOf(runtime: Runtime, req: Request, res: Response): RegisteredAgent {
  const requested = req.params.agentId;
  const name = typeof requested === "string" ? requested : runtime.registry.defaultAgent;
  const agent = runtime.registry.get(name);
  if (!agent) throw new ApiError("unknown_agent", { detail: `No agent named "${name}" is registered.` });
  scopeOf(res).agent = agent.name;
  return agent;
}

/**
 * Validate a request body: first that no key anywhere shadows a built-in object member (see
 * SHADOWING_KEYS; checked on the raw JSON, before parsing copies keys into new objects), then the schema.
 */
export function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  const shadowing = shadowingKeyPath(body);
  if (shadowing) {
    throw new ApiError("validation_failed", {
      detail: `${shadowing}: this key names a member every JavaScript object has (such as __proto__, constructor, toString) and is not accepted`,
    });
  }
  const parsed = schema.safeParse(body ?? {});
  if (!parsed.success) throw new ApiError("validation_failed", { detail: describeIssues(parsed.error) });
  return parsed.data;
}

/**
 * Take the conversation lock for `key` within the request's signal. Busy, a full queue or an
 * expired wait answer 409; an abort while waiting answers as the abort's reason says.
 */
export async function lockConversation(runtime: Runtime, key: string, signal: AbortSignal): Promise<LockLease> {
  let outcome;
  try {
    outcome = await runtime.locks.acquire(key, signal);
  } catch {
    throw new ApiError("lock_unavailable");
  }
  if (outcome.ok) return outcome.lease;
  if (outcome.reason === "aborted") throw classifyRunError(undefined, signal.reason);
  throw new ApiError(outcome.reason === "busy" ? "conversation_busy" : "conversation_queue_timeout");
}

/** Log a failed run without its error text leaking into the response. */
function logRunFailure(res: Response, run: PreparedRun, error: ApiError, cause: unknown): void {
  const level = error.status >= 500 && error.errorCode !== "request_timeout" ? "error" : "warn";
  scopeOf(res).logger[level](
    { run_id: run.runId, agent: run.agent.name, error_code: error.errorCode, cause_type: (cause as Error)?.name },
    "run failed",
  );
}

/** Work done under the conversation lock before the run starts (a resume checks what is pending). */
export type UnderLock = (run: PreparedRun, head: ConversationHead) => PreparedRun;

/**
 * With CHECK_INTERRUPTS on, an ordinary run on a paused conversation answers its interrupts
 * (checked under the lock); otherwise it starts a new turn.
 */
function answerPending(runtime: Runtime, body: { input: Record<string, unknown>; thread_id?: string | undefined }): UnderLock | undefined {
  // A conversation the request just created cannot be paused.
  if (!runtime.config.CHECK_INTERRUPTS || body.thread_id === undefined) return undefined;
  return (run, head) => resumeFromInput(run, head, body.input);
}

/**
 * Under the lock, before the run: one read of the conversation's latest checkpoint answers both the
 * message cap and, for a resume or a run on a paused conversation, what is pending.
 */
async function startUnderLock(runtime: Runtime, run: PreparedRun, underLock: UnderLock | undefined): Promise<PreparedRun> {
  const head = await conversationHead(run.agent, run.storageKey);
  ensureRoomForRun(head, runtime.config.CONVERSATION_MAX_MESSAGES);
  return underLock ? underLock(run, head) : run;
}

async function handleInvoke(runtime: Runtime, req: Request, res: Response): Promise<void> {
  const agent = agentOf(runtime, req, res);
  const body = parseBody(invokeRequestSchema, req.body);
  const run = prepareRun(runtime.config, agent, principalOf(res), body, runtime.models);
  await respondInvoke(runtime, res, run, answerPending(runtime, body));
}

/** Take the conversation lock, run to the end and answer with the final message. */
export async function respondInvoke(runtime: Runtime, res: Response, prepared: PreparedRun, underLock?: UnderLock): Promise<void> {
  const requestSignal = signalOf(res);
  const lease = await lockConversation(runtime, prepared.storageKey, requestSignal);
  const signal = AbortSignal.any([requestSignal, lease.lost]);
  let run = prepared;
  try {
    run = await startUnderLock(runtime, run, underLock);
    const message = await invokeRun(run, signal);
    // Free the conversation before answering, so the caller's next turn never finds it busy.
    await lease.release();
    runtime.metrics.runs.inc({ agent: run.agent.name, outcome: "ok" });
    runtime.metrics.countTokens(run.agent.name, message);
    res.status(200).json(message);
  } catch (cause) {
    forgetUnsavedChanges(run.agent, run.storageKey);
    if (cause instanceof ApiError && cause.status < 500) throw cause;
    const error = classifyRunError(cause, signal.aborted ? signal.reason : undefined, run);
    runtime.metrics.runs.inc({ agent: run.agent.name, outcome: error.errorCode ?? "error" });
    logRunFailure(res, run, error, cause);
    throw error;
  } finally {
    await lease.release();
  }
}

/**
 * The error event's text: the catalogue's fixed description; in development, a generic run
 * failure also names the exception so an agent author can see what broke.
 */
function describeForStream(runtime: Runtime, error: ApiError, cause: unknown): string {
  if (runtime.config.ENV_MODE === "development" && error.errorCode === "run_failed" && cause instanceof Error) {
    return `${error.detail} (${cause.name}: ${cause.message.split("\n")[0]})`;
  }
  return error.detail;
}

export type Framing = { contentType: string; encode: (event: StreamEvent) => string; done?: string; keepalive?: string };

export const SSE: Framing = { contentType: "text/event-stream; charset=utf-8", encode: encodeSseEvent, done: SSE_DONE, keepalive: SSE_KEEPALIVE };
export const JSONL: Framing = { contentType: "application/jsonl; charset=utf-8", encode: encodeJsonlEvent };

/** An AI message without tool calls: the run may end with it. */
function mayBeFinal(event: StreamEvent): boolean {
  return event.type === "message" && event.content.type === "ai" && event.content.tool_calls.length === 0;
}

/**
 * A stream's output, written without waiting for the client: a client that stops reading never
 * stalls the run, so the deadline and the conversation lock keep working, and the run's events are
 * taken as they come instead of piling up inside the graph's stream. What the client has not taken
 * yet waits in the response's buffers (`writableLength`, the socket's included); a client that lets
 * more than `maxUnsent` bytes pile up is a slow consumer, and its connection is cut. The check comes
 * before each write, so one event larger than the cap still goes out whole.
 */
class StreamOutput {
  /** Set when this output cut its client. */
  slowConsumer = false;

  constructor(
    private readonly res: Response,
    private readonly maxUnsent: number,
  ) {}

  /** Queue `chunk` for the client; false when the connection is gone or has just been cut. */
  send(chunk: string): boolean {
    const { res } = this;
    if (res.destroyed || res.writableEnded) return false;
    if (res.writableLength > this.maxUnsent) {
      this.slowConsumer = true;
      res.destroy();
      return false;
    }
    res.write(chunk);
    return true;
  }

  /** Output the client has not taken yet. */
  get unsent(): number {
    return this.res.destroyed ? 0 : this.res.writableLength;
  }
}

async function handleStream(runtime: Runtime, req: Request, res: Response, framing: Framing): Promise<void> {
  const agent = agentOf(runtime, req, res);
  const body = parseBody(streamRequestSchema, req.body);
  const run = prepareRun(runtime.config, agent, principalOf(res), body, runtime.models);
  await respondStream(runtime, res, run, framing, body.stream_tokens, answerPending(runtime, body));
}

/** Take the conversation lock, then stream the run's events in `framing`. */
export async function respondStream(
  runtime: Runtime,
  res: Response,
  prepared: PreparedRun,
  framing: Framing,
  tokens: boolean,
  underLock?: UnderLock,
): Promise<void> {
  const requestSignal = signalOf(res);
  // Conflicts are answered with a status before any stream header is sent.
  const lease = await lockConversation(runtime, prepared.storageKey, requestSignal);
  const signal = AbortSignal.any([requestSignal, lease.lost]);
  let run = prepared;
  try {
    run = await startUnderLock(runtime, run, underLock);
  } catch (error) {
    await lease.release();
    throw error instanceof ApiError ? error : classifyRunError(error, undefined, run);
  }

  res.status(200).set({
    "Content-Type": framing.contentType,
    "Cache-Control": "no-cache, no-transform",
    "X-Accel-Buffering": "no",
  });
  res.flushHeaders();
  const output = new StreamOutput(res, runtime.config.STREAM_MAX_UNSENT_BYTES);
  const keepalive = framing.keepalive
    ? setInterval(() => output.send(framing.keepalive!), runtime.config.STREAM_KEEPALIVE_INTERVAL * 1000)
    : undefined;
  let outcome = "client_disconnected";
  // A message that may be the final answer is held until the next event shows it is not: the final
  // one is written only after the lock is released, so a client acting on it never finds its own
  // conversation busy.
  let held: StreamEvent | undefined;
  const flushHeld = (): boolean => {
    const event = held;
    held = undefined;
    return event ? output.send(framing.encode(event)) : true;
  };
  try {
    for await (const event of streamRun(run, signal, { tokens })) {
      if (event.type === "message") runtime.metrics.countTokens(run.agent.name, event.content);
      if (!flushHeld()) return;
      if (mayBeFinal(event)) held = event;
      else if (!output.send(framing.encode(event))) return;
      keepalive?.refresh();
    }
    outcome = "ok";
    await lease.release();
    if (!flushHeld()) return;
    if (framing.done) output.send(framing.done);
  } catch (cause) {
    forgetUnsavedChanges(run.agent, run.storageKey);
    const error = classifyRunError(cause, signal.aborted ? signal.reason : undefined, run);
    outcome = error.errorCode ?? "error";
    logRunFailure(res, run, error, cause);
    const event: StreamEvent = { type: "error", content: describeForStream(runtime, error, cause) };
    if (error.errorCode) event.error_code = error.errorCode;
    flushHeld();
    output.send(framing.encode(event));
  } finally {
    clearInterval(keepalive);
    if (output.slowConsumer) {
      outcome = "slow_consumer";
      runtime.metrics.streamCuts.inc({ reason: "slow_consumer" });
    }
    runtime.metrics.runs.inc({ agent: run.agent.name, outcome });
    await lease.release();
    res.end();
    if (output.unsent > 0 && isDeadline(signal.reason)) {
      // The deadline ends the stream now, not when a client that stopped reading takes the rest:
      // destroying the connection closes the response, which releases the admission slot.
      res.destroy();
      runtime.metrics.streamCuts.inc({ reason: "deadline" });
    }
  }
}

function isDeadline(reason: unknown): boolean {
  return reason instanceof RunAborted && reason.reason === "deadline";
}

export function runRoutes(runtime: Runtime): Router {
  const router = Router();
  router.post("{/:agentId}/invoke", (req, res) => handleInvoke(runtime, req, res));
  router.post("{/:agentId}/stream", (req, res) => handleStream(runtime, req, res, SSE));
  router.post("{/:agentId}/stream/jsonl", (req, res) => handleStream(runtime, req, res, JSONL));
  return router;
}
