import { createHmac, randomUUID, timingSafeEqual } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { Agent } from "undici";
import { FINISHED, type RunStatus } from "../checkpoints/platform-records.ts";
import type { Config } from "../config/schema.ts";
import type { Logger } from "../observability/logger.ts";
import type { WireRun } from "../platform/platform-runs.ts";
import { allowedAddresses, guardedLookup, staticTarget, systemResolver, WebhookTargetRefused, type WebhookResolver } from "./webhook-target.ts";

/**
 * Completion webhooks of background runs: when a run with a `webhook` reaches its final status, the
 * worker that ended it POSTs the run (and the thread's values, or the error) to that URL as JSON,
 * signed with WEBHOOK_SIGNING_SECRET, retried with exponential backoff and jitter on network errors,
 * timeouts, 429 and 5xx (never on another 4xx, a redirect, or an address refused), up to
 * WEBHOOK_MAX_ATTEMPTS attempts of at most WEBHOOK_TIMEOUT each. Retries wait in the worker's memory:
 * a delivery in progress is lost if its worker dies or stops.
 *
 * The signature (`X-Agenthost-Signature: t=<unix seconds>,v1=<hex>`) is HMAC-SHA256, keyed by the
 * secret, over `<t>.` followed by the body's exact bytes; every attempt is signed afresh (a new t),
 * the body is the same. `X-Agenthost-Webhook-Id` is the same on every attempt of one delivery: a
 * receiver that saw it already can answer 2xx and do nothing.
 */

export type WebhookSettings = Pick<
  Config,
  | "WEBHOOK_SIGNING_SECRET"
  | "WEBHOOK_ALLOWED_HOSTS"
  | "WEBHOOK_MAX_ATTEMPTS"
  | "WEBHOOK_TIMEOUT"
  | "WEBHOOK_RETRY_DELAY"
  | "WEBHOOK_MAX_BYTES"
  | "WEBHOOK_MAX_PENDING"
>;

export const SIGNATURE_HEADER = "x-agenthost-signature";
export const WEBHOOK_ID_HEADER = "x-agenthost-webhook-id";

/** Seconds a signature's timestamp may be away from the receiver's clock (verifyWebhookSignature's default). */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

/** The longest wait between two attempts, whatever the backoff or a Retry-After says. */
const MAX_RETRY_DELAY_MS = 5 * 60_000;

/** Bytes of a receiver's answer read (and thrown away) so that its connection can be reused. */
const RESPONSE_READ_LIMIT = 4096;

/** The longest error message a payload carries. */
const ERROR_MESSAGE_MAX = 500;

/** `X-Agenthost-Signature`'s value for `body` sent at `timestamp` (unix seconds). */
export function signWebhook(secret: string, body: string | Uint8Array, timestamp: number): string {
  const hmac = createHmac("sha256", secret).update(`${timestamp}.`).update(body);
  return `t=${timestamp},v1=${hmac.digest("hex")}`;
}

/**
 * Whether `header` signs `body` with `secret`, at a timestamp within `toleranceSeconds` of `now`
 * (unix seconds): what a receiver checks (docs/langgraph-clients.md shows the same in a few lines).
 * Any `v1` entry may match (several are allowed for a secret's rotation).
 */
export function verifyWebhookSignature(
  secret: string,
  header: string | undefined,
  body: string | Uint8Array,
  options: { readonly toleranceSeconds?: number; readonly now?: number } = {},
): boolean {
  if (!header) return false;
  const parts = header.split(",").map((part) => part.trim().split("="));
  const t = parts.find(([key]) => key === "t")?.[1];
  if (!t || !/^\d{1,12}$/.test(t)) return false;
  const now = options.now ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - Number(t)) > (options.toleranceSeconds ?? SIGNATURE_TOLERANCE_SECONDS)) return false;
  const expected = Buffer.from(signWebhook(secret, body, Number(t)).split("v1=")[1]!, "hex");
  return parts.some(([key, value]) => {
    if (key !== "v1" || !value || !/^[0-9a-f]{64}$/i.test(value)) return false;
    return timingSafeEqual(Buffer.from(value, "hex"), expected);
  });
}

/** The final statuses a webhook reports. */
export type FinalRunStatus = Extract<RunStatus, "success" | "error" | "timeout" | "interrupted">;

/** A run's failure as a webhook tells it: agenthost's error code and its catalogue text. */
export interface WebhookError {
  readonly error: string;
  readonly message: string;
}

/**
 * What a webhook POSTs: the run (LangGraph's field names: run_id, thread_id, assistant_id, status,
 * created_at, updated_at, metadata, multitask_strategy), when it started and ended if known, when the
 * delivery began (`webhook_sent_at`, the same on every attempt), and the thread's values at the end
 * or the error. `values_omitted` is true when the values were left out to keep the body within
 * WEBHOOK_MAX_BYTES (read them with GET /threads/{thread_id}/state).
 */
export interface WebhookPayload {
  readonly run_id: string;
  readonly thread_id: string;
  readonly assistant_id: string;
  readonly status: FinalRunStatus;
  readonly created_at: string;
  readonly updated_at: string;
  readonly metadata: Record<string, unknown>;
  readonly multitask_strategy: string;
  readonly run_started_at?: string;
  readonly run_ended_at?: string;
  readonly webhook_sent_at?: string;
  readonly values?: unknown;
  readonly values_omitted?: true;
  readonly error?: WebhookError;
}

/** How a run ended, for its webhook. */
export interface WebhookRunEnd {
  /** The thread's values when the run ended (graph state on the wire, as GET …/state answers `values`). */
  readonly values?: unknown;
  /** Set when the run ended `error` or `timeout`: its error code and catalogue text, never a stack or a provider's words. */
  readonly error?: WebhookError;
  /** Milliseconds since the epoch. */
  readonly startedAt?: number;
  readonly endedAt?: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * The payload for `run` (its record as the Platform API answers it, in a final status) and how it
 * ended. The run's `kwargs` (its input, and the webhook URL itself) are not sent. An error's message
 * is cut to its first line and ERROR_MESSAGE_MAX characters.
 */
export function webhookPayload(run: WireRun, end: WebhookRunEnd): WebhookPayload {
  if (!FINISHED.has(run.status)) throw new Error(`a webhook reports a run in a final status, not ${run.status}`);
  const error = end.error
    ? { error: String(end.error.error).slice(0, 100), message: String(end.error.message).split("\n")[0]!.slice(0, ERROR_MESSAGE_MAX) }
    : undefined;
  return {
    run_id: run.run_id,
    thread_id: run.thread_id,
    assistant_id: run.assistant_id,
    status: run.status as FinalRunStatus,
    created_at: run.created_at,
    updated_at: run.updated_at,
    metadata: run.metadata,
    multitask_strategy: run.multitask_strategy,
    ...(end.startedAt !== undefined ? { run_started_at: iso(end.startedAt) } : {}),
    ...(end.endedAt !== undefined ? { run_ended_at: iso(end.endedAt) } : {}),
    ...(end.values !== undefined ? { values: end.values } : {}),
    ...(error ? { error } : {}),
  };
}

/**
 * The body for `payload` within `maxBytes`: whole, else without its values (`values_omitted`), else
 * without its metadata too. Undefined when even that is too large (it cannot be: the rest is bounded).
 */
export function webhookBody(payload: WebhookPayload, sentAt: number, maxBytes: number): Buffer | undefined {
  const stamped = { ...payload, webhook_sent_at: iso(sentAt) };
  const whole = Buffer.from(JSON.stringify(stamped));
  if (whole.length <= maxBytes) return whole;
  const { values: _values, ...rest } = stamped;
  const lean = Buffer.from(JSON.stringify({ ...rest, values_omitted: true }));
  if (lean.length <= maxBytes) return lean;
  const leaner = Buffer.from(JSON.stringify({ ...rest, metadata: {}, values_omitted: true }));
  return leaner.length <= maxBytes ? leaner : undefined;
}

/** How one delivery ended. */
export type WebhookOutcomeKind =
  /** A 2xx answer. */
  | "delivered"
  /** Every attempt failed, or an answer that is not retried (a 4xx other than 429, a redirect). */
  | "failed"
  /** The URL or every address of its host is not allowed; nothing was sent. */
  | "refused"
  /** Not attempted: WEBHOOK_MAX_PENDING deliveries were in progress, or the body could not fit. */
  | "dropped"
  /** Stopped by close() (the worker stops) before it ended. */
  | "cancelled";

export interface WebhookOutcome {
  readonly outcome: WebhookOutcomeKind;
  readonly deliveryId: string;
  readonly runId: string;
  /** Attempts made (requests sent or tried). */
  readonly attempts: number;
  /** The last answer's status, if one came. */
  readonly statusCode?: number;
  /** Why it was not delivered, in a few words (no URL path or query, no secret). */
  readonly reason?: string;
}

export interface WebhookSenderOptions {
  readonly settings: WebhookSettings;
  readonly logger: Logger;
  /** Host name → addresses; the system's resolver by default. */
  readonly resolve?: WebhookResolver;
  /** Called once per delivery with how it ended (a metric's counter, a test). */
  readonly onOutcome?: (outcome: WebhookOutcome) => void;
  /** In [0, 1): the jitter's randomness (Math.random by default). */
  readonly random?: () => number;
}

/** One attempt's result: done (delivered or given up), or retry after at least `retryAfterMs`. */
type Attempt =
  | { readonly done: true; readonly outcome: "delivered" | "failed" | "refused"; readonly statusCode?: number; readonly reason?: string }
  | { readonly done: false; readonly statusCode?: number; readonly reason: string; readonly retryAfterMs?: number };

/** A URL as logs may show it: scheme, host and port, never its path or query. */
const originOf = (url: URL) => url.origin;

/** The delay before attempt `next` (2, 3, …): base·2^(next-2), capped, then between half of it and all of it. */
export function retryDelayMs(baseSeconds: number, next: number, random: () => number, retryAfterMs?: number): number {
  const backoff = Math.min(MAX_RETRY_DELAY_MS, baseSeconds * 1000 * 2 ** (next - 2));
  const jittered = backoff / 2 + (random() * backoff) / 2;
  return Math.min(MAX_RETRY_DELAY_MS, Math.max(jittered, retryAfterMs ?? 0));
}

/** Retry-After in milliseconds (delta-seconds or an HTTP date), if the header says. */
function retryAfterOf(value: string | string[] | undefined): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (!text) return undefined;
  if (/^\d+$/.test(text.trim())) return Number(text.trim()) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** The first error code in `error`'s cause chain (ECONNREFUSED, UND_ERR_HEADERS_TIMEOUT, …), or its name. */
function failureReason(error: unknown): { reason: string; refused: boolean } {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    if (current instanceof WebhookTargetRefused) return { reason: current.reason, refused: true };
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string") return { reason: code, refused: false };
    if (current.name === "TimeoutError") return { reason: "timeout", refused: false };
    current = current.cause;
  }
  return { reason: error instanceof Error ? error.name : "error", refused: false };
}

/**
 * Sends completion webhooks: `send` returns at once and the delivery (with its retries) goes on in
 * this process; `close` stops the ones in progress. One undici Agent carries them, its connections
 * made only to addresses the allow rules let through (`guardedLookup`).
 */
export class WebhookSender {
  private readonly agent: Agent;
  private readonly resolve: WebhookResolver;
  private readonly random: () => number;
  private readonly stop = new AbortController();
  private readonly deliveries = new Set<Promise<void>>();

  constructor(private readonly options: WebhookSenderOptions) {
    const { settings } = options;
    this.resolve = options.resolve ?? systemResolver;
    this.random = options.random ?? Math.random;
    const timeoutMs = Math.max(1, Math.round(settings.WEBHOOK_TIMEOUT * 1000));
    this.agent = new Agent({
      connect: { timeout: timeoutMs, lookup: guardedLookup(settings.WEBHOOK_ALLOWED_HOSTS, this.resolve) },
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      keepAliveTimeout: 4_000,
      connections: 16,
    });
  }

  /** Deliveries in progress (attempting, or waiting to retry). */
  get pending(): number {
    return this.deliveries.size;
  }

  /**
   * Deliver `payload` to `url` (a run's `webhook`, checked by checkWebhookUrl when the run was
   * created; checked again here). Returns at once; never throws. The outcome is logged (and given to
   * `onOutcome`) when the delivery ends.
   */
  send(url: string, payload: WebhookPayload): void {
    const deliveryId = randomUUID();
    const { settings } = this.options;
    const base = { deliveryId, runId: payload.run_id };
    if (this.stop.signal.aborted) return this.report(undefined, { ...base, outcome: "cancelled", attempts: 0, reason: "the sender is closed" });
    if (!settings.WEBHOOK_SIGNING_SECRET) return this.report(undefined, { ...base, outcome: "refused", attempts: 0, reason: "WEBHOOK_SIGNING_SECRET is not set" });
    let target: URL;
    try {
      target = staticTarget(url, settings.WEBHOOK_ALLOWED_HOSTS);
    } catch (error) {
      return this.report(undefined, { ...base, outcome: "refused", attempts: 0, reason: failureReason(error).reason });
    }
    if (this.deliveries.size >= settings.WEBHOOK_MAX_PENDING) {
      return this.report(target, { ...base, outcome: "dropped", attempts: 0, reason: `${settings.WEBHOOK_MAX_PENDING} deliveries in progress (WEBHOOK_MAX_PENDING)` });
    }
    const body = webhookBody(payload, Date.now(), settings.WEBHOOK_MAX_BYTES);
    if (!body) return this.report(target, { ...base, outcome: "dropped", attempts: 0, reason: "the payload exceeds WEBHOOK_MAX_BYTES" });
    const delivery: Promise<void> = this.deliver(target, body, settings.WEBHOOK_SIGNING_SECRET, base)
      .catch((error: unknown) => this.report(target, { ...base, outcome: "failed", attempts: 0, reason: failureReason(error).reason }))
      .finally(() => this.deliveries.delete(delivery));
    this.deliveries.add(delivery);
  }

  /** Resolves when no delivery is in progress (tests, and a drain that wants to wait). */
  async idle(): Promise<void> {
    while (this.deliveries.size > 0) await Promise.allSettled([...this.deliveries]);
  }

  /** Stop: deliveries in progress end `cancelled` (their retries are not made), and the connections close. */
  async close(): Promise<void> {
    this.stop.abort();
    await this.idle();
    await this.agent.destroy();
  }

  private async deliver(url: URL, body: Buffer, secret: string, base: { deliveryId: string; runId: string }): Promise<void> {
    const { settings } = this.options;
    let last: Attempt | undefined;
    for (let attempt = 1; attempt <= settings.WEBHOOK_MAX_ATTEMPTS; attempt++) {
      if (attempt > 1) {
        const delay = retryDelayMs(settings.WEBHOOK_RETRY_DELAY, attempt, this.random, last && !last.done ? last.retryAfterMs : undefined);
        this.options.logger.debug({ run_id: base.runId, webhook: originOf(url), attempt: attempt - 1, status_code: last?.statusCode, reason: last?.reason, retry_in_ms: Math.round(delay) }, "webhook attempt failed; retrying");
        try {
          await sleep(delay, undefined, { signal: this.stop.signal, ref: false });
        } catch {
          return this.report(url, { ...base, outcome: "cancelled", attempts: attempt - 1, statusCode: last?.statusCode, reason: "the sender closed" });
        }
      }
      if (this.stop.signal.aborted) return this.report(url, { ...base, outcome: "cancelled", attempts: attempt - 1, statusCode: last?.statusCode, reason: "the sender closed" });
      last = await this.attempt(url, body, secret, base.deliveryId);
      if (this.stop.signal.aborted && !last.done) return this.report(url, { ...base, outcome: "cancelled", attempts: attempt, statusCode: last.statusCode, reason: "the sender closed" });
      if (last.done) return this.report(url, { ...base, outcome: last.outcome, attempts: attempt, statusCode: last.statusCode, reason: last.reason });
    }
    this.report(url, { ...base, outcome: "failed", attempts: settings.WEBHOOK_MAX_ATTEMPTS, statusCode: last?.statusCode, reason: `${last?.reason ?? "failed"} on every attempt (WEBHOOK_MAX_ATTEMPTS)` });
  }

  private async attempt(url: URL, body: Buffer, secret: string, deliveryId: string): Promise<Attempt> {
    const { settings } = this.options;
    try {
      // Checked before each attempt: a literal address is never looked up by the connection, and a
      // name refused now is not retried. The connection's own lookup checks again (guardedLookup).
      await allowedAddresses(url.hostname, settings.WEBHOOK_ALLOWED_HOSTS, this.resolve);
    } catch (error) {
      const { reason, refused } = failureReason(error);
      return refused ? { done: true, outcome: "refused", reason } : { done: false, reason };
    }
    const timeout = AbortSignal.timeout(Math.max(1, Math.round(settings.WEBHOOK_TIMEOUT * 1000)));
    try {
      const response = await this.agent.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: "POST",
        headers: {
          "content-type": "application/json",
          "user-agent": "agenthost-webhook",
          [SIGNATURE_HEADER]: signWebhook(secret, body, Math.floor(Date.now() / 1000)),
          [WEBHOOK_ID_HEADER]: deliveryId,
        },
        body,
        signal: AbortSignal.any([this.stop.signal, timeout]),
      });
      const statusCode = response.statusCode;
      // Never read beyond a few KiB of the answer (nothing of it is used).
      await response.body.dump({ limit: RESPONSE_READ_LIMIT }).catch(() => undefined);
      if (statusCode >= 200 && statusCode < 300) return { done: true, outcome: "delivered", statusCode };
      if (statusCode === 429 || statusCode >= 500) return { done: false, statusCode, reason: `answered ${statusCode}`, retryAfterMs: retryAfterOf(response.headers["retry-after"]) };
      const why = statusCode >= 300 && statusCode < 400 ? `answered ${statusCode} (redirects are not followed)` : `answered ${statusCode}`;
      return { done: true, outcome: "failed", statusCode, reason: why };
    } catch (error) {
      const { reason, refused } = failureReason(timeout.aborted && !this.stop.signal.aborted ? Object.assign(new Error("timeout"), { code: "timeout" }) : error);
      return refused ? { done: true, outcome: "refused", reason } : { done: false, reason };
    }
  }

  private report(url: URL | undefined, outcome: WebhookOutcome): void {
    const fields = {
      run_id: outcome.runId,
      webhook_id: outcome.deliveryId,
      webhook: url ? originOf(url) : undefined,
      outcome: outcome.outcome,
      attempts: outcome.attempts,
      status_code: outcome.statusCode,
      reason: outcome.reason,
    };
    if (outcome.outcome === "delivered") this.options.logger.info(fields, "webhook delivered");
    else this.options.logger.warn(fields, `webhook ${outcome.outcome}`);
    try {
      this.options.onOutcome?.(outcome);
    } catch {
      // A counter that throws does not stop deliveries.
    }
  }
}
