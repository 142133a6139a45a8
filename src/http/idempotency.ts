import { createHash } from "node:crypto";
import type { Request } from "express";
import type { RegisteredAgent } from "../agents/agent.ts";
import type { Principal } from "../auth/principal.ts";
import type { IdempotencyStore } from "../checkpoints/idempotency-store.ts";
import { ServiceError } from "../errors/service-error.ts";
import type { Logger } from "../observability/logger.ts";
import { toApiError } from "./error-answer.ts";

/**
 * Safe retries: an `Idempotency-Key` header on invoke, history append and feedback. The key is
 * scoped to the caller (its token's kind and bound user) and the agent; the request is
 * fingerprinted by operation and body. The first request claims the key in the checkpoint
 * database; a retry with the same body gets the first answer again (status and body, header
 * `Idempotent-Replayed: true`, and the first run's `X-Run-Id`) without running anything, a retry while the first still runs gets
 * 409 `idempotency_in_progress`, and the key with another request 422 `idempotency_key_reused`.
 *
 * What is kept: once a run has begun executing its graph it may have stored steps, so whatever it
 * answers is final for the key — its message, or its failure (409 run_cancelled, 504
 * request_timeout, a provider's 429/5xx, 500 run_failed) — and a retry replays that answer instead of
 * running the turn a second time. A request refused before anything ran (validation, 503
 * service_busy, a busy conversation, the database unavailable before the run) gives its key up, so a
 * retry runs. A history append and a feedback keep only their successes: their one write either
 * happened or did not. A claim whose request died with its worker runs out after REQUEST_TIMEOUT plus
 * a margin. Kept answers expire after IDEMPOTENCY_TTL.
 *
 * A client that leaves does not stop work that has a key (mount-operations sets the request's
 * `outlives`): the run goes on to its end within REQUEST_TIMEOUT and its answer is kept, so the
 * retry the client sends once it reconnects gets 409 `idempotency_in_progress` while it runs and
 * then the answer, never a stop the client caused itself.
 */
export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
export const REPLAYED_HEADER = "Idempotent-Replayed";

/** 1 to 255 visible ASCII characters (a UUID is the usual choice). */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/** How long past REQUEST_TIMEOUT a running claim holds: the run is aborted at the deadline, then settles. */
const CLAIM_MARGIN_MS = 30_000;
/** Expired keys are swept at most this often per worker. */
const SWEEP_INTERVAL_MS = 60_000;

export interface IdempotencySettings {
  readonly store: IdempotencyStore;
  /** IDEMPOTENCY_TTL in milliseconds. */
  readonly ttlMs: number;
  /** REQUEST_TIMEOUT in milliseconds. */
  readonly requestTimeoutMs: number;
  /**
   * The storage key of the conversation `named` names (the answer's body; for a kept failure, which
   * names none, the request's), so retention deletes the key with it.
   */
  readonly threadOf: (principal: Principal, agent: RegisteredAgent, named: unknown, sent: unknown) => string | null;
}

/** A JSON answer, or the stored text of one being replayed (with the run that gave it, for `X-Run-Id`). */
export type IdempotentAnswer =
  | { readonly replayed: false; readonly status: number; readonly body: unknown }
  | { readonly replayed: true; readonly status: number; readonly text: string; readonly runId: string | null };

/** JSON text with every object's keys in order, so equal bodies fingerprint alike. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

/** The key a request sent, validated; undefined when it sent none. */
export function idempotencyKeyOf(req: Request): string | undefined {
  const value = req.headers[IDEMPOTENCY_KEY_HEADER.toLowerCase()];
  if (value === undefined) return undefined;
  if (typeof value !== "string" || !IDEMPOTENCY_KEY_PATTERN.test(value)) {
    throw new ServiceError("validation_failed", { detail: `${IDEMPOTENCY_KEY_HEADER} must be 1 to 255 visible ASCII characters, sent once.` });
  }
  return value;
}

export class IdempotentRequests {
  private lastSweep = 0;

  constructor(private readonly settings: IdempotencySettings) {}

  /** Answer the request once per key: run it, or replay the first answer, or refuse. */
  async answer(
    key: string,
    request: {
      operation: string;
      principal: Principal;
      agent: RegisteredAgent;
      sent: unknown;
      logger: Logger;
      /** Whether the work went far enough that its failure must be kept (a run that began executing). */
      executed: () => boolean;
      /** The run the request started, once it announced one (kept with the answer for `X-Run-Id`). */
      runId: () => string | undefined;
    },
    run: () => Promise<{ status: number; body: unknown }>,
  ): Promise<IdempotentAnswer> {
    const { store, ttlMs, requestTimeoutMs } = this.settings;
    const { principal, agent, sent } = request;
    const scope = sha256(canonicalJson([principal.kind, principal.boundUserId ?? null, agent.name, key]));
    const fingerprint = sha256(canonicalJson([request.operation, sent ?? null]));
    const now = Date.now();
    this.sweep(now, request.logger);
    const claim = await store.claim(scope, fingerprint, now, now + requestTimeoutMs + CLAIM_MARGIN_MS, now + ttlMs);
    if (!claim.claimed) {
      if (claim.record.fingerprint !== fingerprint) throw new ServiceError("idempotency_key_reused");
      if (!claim.record.answer) throw new ServiceError("idempotency_in_progress");
      const { status, body, runId } = claim.record.answer;
      return { replayed: true, status, text: body, runId };
    }
    let answer: { status: number; body: unknown };
    try {
      answer = await run();
    } catch (error) {
      if (!request.executed()) {
        // Refused before anything ran: a retry may run.
        await store.release(scope).catch((cause: unknown) => request.logger.warn({ err: { message: (cause as Error).message } }, "idempotency key not released"));
        throw error;
      }
      // The run began and may have stored steps: its failure is the answer, as the error handler renders it.
      const failure = toApiError(error);
      const thread = this.settings.threadOf(principal, agent, sent, sent);
      await this.keep(scope, thread, { status: failure.status, body: failure.toBody() }, request);
      throw error;
    }
    await this.keep(scope, this.settings.threadOf(principal, agent, answer.body, sent), answer, request);
    return { replayed: false, ...answer };
  }

  /**
   * Store the answer of finished work. If it cannot be kept, the caller still gets it (a retry then
   * finds the key running until its claim runs out, never a second run).
   */
  private async keep(
    scope: string,
    thread: string | null,
    answer: { status: number; body: unknown },
    request: { logger: Logger; runId: () => string | undefined },
  ): Promise<void> {
    try {
      const stored = { status: answer.status, body: JSON.stringify(answer.body), runId: request.runId() ?? null };
      await this.settings.store.complete(scope, thread, stored, Date.now() + this.settings.ttlMs);
    } catch (cause) {
      request.logger.warn({ err: { message: (cause as Error).message } }, "idempotent answer not stored");
    }
  }

  /** Delete expired keys now and then, in the background. */
  private sweep(now: number, logger: Logger): void {
    if (now - this.lastSweep < SWEEP_INTERVAL_MS) return;
    this.lastSweep = now;
    this.settings.store.sweep(now).catch((cause: unknown) => logger.warn({ err: { message: (cause as Error).message } }, "expired idempotency keys not swept"));
  }
}
