import { CallScope, raceSignal } from "./call-scope.ts";
import { AgentClientError, errorFromResponse, idsOf, isRecord, withIds } from "./errors.ts";
import { isChatMessage, readEvent } from "./events.ts";
import { readLines } from "./lines.ts";
import { pause } from "./pause.ts";
import { mayResume, newThreadId, positionedFrames } from "./resumable.ts";
import { decodeSse } from "./sse.ts";
import { secretFromEnvironment } from "./environment.ts";
import { IDEMPOTENCY_KEY_HEADER, mergeHeaders, newIdempotencyKey, REPLAYED_HEADER, type HeaderHook } from "./request-headers.ts";
import { resolveRetryPolicy, retryDelay, type ResolvedRetryPolicy, type RetryPolicy } from "./retry-policy.ts";
import type {
  AddMessagesRequest,
  CancelRequest,
  CancelResult,
  CallOptions,
  ChatMessage,
  ClearHistoryRequest,
  FeedbackRequest,
  HistoryPage,
  HistoryQuery,
  IdempotentCallOptions,
  InvokeOptions,
  JsonObject,
  MessageContent,
  ResumeRequest,
  RunOptions,
  ServiceInfo,
  StreamItem,
  StreamOptions,
  ThreadListPage,
  ThreadListQuery,
} from "./types.ts";

/** The fetch the client calls: the global one, or one the caller injects (and keeps ownership of). */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface AgentClientOptions {
  /** Full URL of the service, with port (and path prefix, if behind one): `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** Agent to call. Omitted: the service's default agent (see `getInfo`). */
  agent?: string;
  /** Bearer token. Omitted: `process.env.AUTH_SECRET` where there is a `process` (no .env loading). */
  authSecret?: string;
  /**
   * With no `agent`: true (default) reads `/info` once, on the first call that needs an agent, and uses
   * its `default_agent`; false calls the default-agent routes without a prefix (`/invoke`, ...).
   */
  getInfo?: boolean;
  /** Replaces the global fetch (a proxy, a test double, an undici dispatcher). The client never closes it. */
  fetch?: FetchLike;
  /** Milliseconds for a whole non-streaming call, and for a stream's response headers. 0: no limit. */
  timeout?: number;
  /** Milliseconds a stream may stay silent (no bytes, keep-alive comments included) before it fails. 0: no limit. */
  streamTimeout?: number;
  /**
   * Opt-in retries of 503 and 429 answers, honouring Retry-After (retry-policy.ts); `true` for the
   * defaults. Off by default: the client then never retries.
   */
  retry?: RetryPolicy | boolean;
  /** Adds headers to every request (request-headers.ts). */
  headers?: HeaderHook;
}

/** Longer than the service's default REQUEST_TIMEOUT (300 s), so its own 504 arrives first. */
export const DEFAULT_TIMEOUT_MS = 330_000;
export const DEFAULT_STREAM_TIMEOUT_MS = 300_000;

const RUN_FIELDS = [
  "thread_id",
  "user_id",
  "model_config_key",
  "model_name",
  "model_provider",
  "agent_config",
  "recursion_limit",
] as const satisfies readonly (keyof RunOptions)[];

/**
 * Client for one agenthost service. Unless the retry policy is on it never retries: a failed call is
 * reported once, as an AgentClientError (or the caller's abort reason when their signal cancelled it).
 */
export class AgentClient {
  readonly baseUrl: string;
  private agentName: string | undefined;
  private readonly getInfo: boolean;
  private readonly authSecret: string | undefined;
  private readonly fetchImpl: FetchLike;
  private readonly timeout: number;
  private readonly streamTimeout: number;
  private defaultAgent: Promise<string> | undefined;
  private readonly retry: ResolvedRetryPolicy | undefined;
  private readonly headerHook: HeaderHook | undefined;

  constructor(options: AgentClientOptions) {
    const url = new URL(options.baseUrl);
    this.baseUrl = url.href.replace(/\/+$/, "");
    this.agentName = options.agent;
    this.getInfo = options.getInfo ?? true;
    this.authSecret = options.authSecret ?? secretFromEnvironment();
    this.fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.timeout = options.timeout ?? DEFAULT_TIMEOUT_MS;
    this.streamTimeout = options.streamTimeout ?? DEFAULT_STREAM_TIMEOUT_MS;
    this.retry = resolveRetryPolicy(options.retry);
    this.headerHook = options.headers;
  }

  /** The agent calls go to: the configured one, the default agent once `/info` was read, else undefined. */
  get agent(): string | undefined {
    return this.agentName;
  }

  /** `GET /info`: the agents (key, description) and the default agent. */
  async info(options: Pick<CallOptions, "signal"> = {}): Promise<ServiceInfo> {
    const body = await this.requestJson("GET", "/info", undefined, options);
    if (!isRecord(body) || !Array.isArray(body.agents) || typeof body.default_agent !== "string") {
      throw unexpected("GET /info", "an object with agents and default_agent");
    }
    return body as ServiceInfo;
  }

  /** Run the agent and wait for its final message. Omit `thread_id` to start a conversation. */
  async invoke(message: MessageContent, options: InvokeOptions = {}): Promise<ChatMessage> {
    const path = (await this.agentPrefix(options)) + "/invoke";
    const body = await this.requestJson("POST", path, runBody(message, options), options, this.keyFor(options));
    if (!isChatMessage(body)) throw unexpected(`POST ${path}`, "a ChatMessage");
    return body;
  }

  /**
   * Run the agent over SSE. Yields each token's text (with `stream_tokens`, the default) and each
   * complete message. Throws AgentClientError for an error event, a malformed frame, an idle gap
   * longer than streamTimeout, and a stream that ends without `[DONE]`. Nothing is sent until the
   * first iteration; breaking out of the loop closes the connection.
   */
  stream(message: MessageContent, options: StreamOptions = {}): AsyncGenerator<StreamItem, void, undefined> {
    if (options.resumable) return this.resumableEvents("SSE", message, options);
    return this.events("/stream", "SSE", message, options);
  }

  /** Like `stream`, over JSON Lines. The format has no end marker: a clean end alone is the end. */
  streamJsonl(message: MessageContent, options: StreamOptions = {}): AsyncGenerator<StreamItem, void, undefined> {
    if (options.resumable) return this.resumableEvents("JSON Lines", message, options);
    return this.events("/stream/jsonl", "JSON Lines", message, options);
  }

  /**
   * Stop the run holding a conversation, on whichever worker or host it runs. Its invoke then fails
   * with errorCode `run_cancelled` (its stream with an error event of that code).
   */
  async cancel(request: CancelRequest, options: CallOptions = {}): Promise<CancelResult> {
    const path = (await this.agentPrefix(options)) + "/cancel";
    const body = await this.requestJson("POST", path, request, options);
    if (!isRecord(body) || typeof body.cancelled !== "boolean") throw unexpected(`POST ${path}`, "a cancel answer");
    return body as unknown as CancelResult;
  }

  /** One page of a conversation's messages. */
  async getHistory(query: HistoryQuery, options: CallOptions = {}): Promise<HistoryPage> {
    const params = new URLSearchParams({ thread_id: query.thread_id });
    if (query.user_id !== undefined) params.set("user_id", query.user_id);
    if (query.limit !== undefined) params.set("limit", String(query.limit));
    if (query.offset !== undefined) params.set("offset", String(query.offset));
    const path = `${await this.agentPrefix(options)}/history?${params}`;
    const body = await this.requestJson("GET", path, undefined, options);
    if (
      !isRecord(body) ||
      !Array.isArray(body.messages) ||
      typeof body.total !== "number" ||
      !(body.next_offset === null || typeof body.next_offset === "number")
    ) {
      throw unexpected(`GET ${path}`, "a history page");
    }
    return body as unknown as HistoryPage;
  }

  /** Every page of a conversation, in order, following `next_offset` until it is null. */
  async *historyPages(query: HistoryQuery, options: CallOptions = {}): AsyncGenerator<HistoryPage, void, undefined> {
    let offset = query.offset ?? 0;
    for (;;) {
      const page = await this.getHistory({ ...query, offset }, options);
      yield page;
      if (page.next_offset === null) return;
      if (page.next_offset <= offset) {
        throw unexpected("GET history", `a next_offset beyond ${offset}, not ${page.next_offset}`);
      }
      offset = page.next_offset;
    }
  }

  /** Append messages to a conversation without running the agent. Returns the service's answer body. */
  async addMessages(request: AddMessagesRequest, options: IdempotentCallOptions = {}): Promise<JsonObject> {
    const path = (await this.agentPrefix(options)) + "/history/add_messages";
    return asObject(await this.requestJson("POST", path, request, options, this.keyFor(options)));
  }

  /** Delete every checkpoint of a conversation (long-term memory is untouched). */
  async clearHistory(request: ClearHistoryRequest, options: CallOptions = {}): Promise<JsonObject> {
    const path = (await this.agentPrefix(options)) + "/history/clear";
    return asObject(await this.requestJson("DELETE", path, request, options));
  }

  /**
   * Record feedback on a run. Pass `feedback_token` from that run's message yourself: the client
   * keeps no proofs.
   */
  async createFeedback(request: FeedbackRequest, options: IdempotentCallOptions = {}): Promise<JsonObject> {
    const path = (await this.agentPrefix(options)) + "/feedback";
    return asObject(await this.requestJson("POST", path, request, options, this.keyFor(options)));
  }

  /** Continue an interrupted run (an approval, an answer) and wait for its final message. */
  async resume(request: ResumeRequest, options: CallOptions = {}): Promise<ChatMessage> {
    const path = (await this.agentPrefix(options)) + "/resume";
    const body = await this.requestJson("POST", path, request, options);
    if (!isChatMessage(body)) throw unexpected(`POST ${path}`, "a ChatMessage");
    return body;
  }

  /** One page of the caller's conversations with the agent, most recently updated first. */
  async listThreads(query: ThreadListQuery = {}, options: CallOptions = {}): Promise<ThreadListPage> {
    const params = new URLSearchParams();
    if (query.user_id !== undefined) params.set("user_id", query.user_id);
    if (query.limit !== undefined) params.set("limit", String(query.limit));
    if (query.offset !== undefined) params.set("offset", String(query.offset));
    const search = params.toString() ? `?${params}` : "";
    const path = `${await this.agentPrefix(options)}/threads${search}`;
    const body = await this.requestJson("GET", path, undefined, options);
    if (
      !isRecord(body) ||
      !Array.isArray(body.threads) ||
      typeof body.total !== "number" ||
      !(body.next_offset === null || typeof body.next_offset === "number")
    ) {
      throw unexpected(`GET ${path}`, "a thread list");
    }
    return body as unknown as ThreadListPage;
  }

  /** The call's Idempotency-Key: the caller's, or with retries on a new one (a retry must not run twice). */
  private keyFor(options: IdempotentCallOptions): string | undefined {
    return options.idempotencyKey ?? (this.retry ? newIdempotencyKey() : undefined);
  }

  private async agentPrefix(options: CallOptions): Promise<string> {
    let agent = options.agent ?? this.agentName;
    if (agent === undefined && this.getInfo) agent = await raceSignal(this.loadDefaultAgent(), options.signal);
    return agent === undefined ? "" : `/${encodeURIComponent(agent)}`;
  }

  /** One `/info` read shared by concurrent first calls; a failure is not remembered. */
  private loadDefaultAgent(): Promise<string> {
    this.defaultAgent ??= this.info().then(
      (info) => {
        this.agentName ??= info.default_agent;
        return info.default_agent;
      },
      (error: unknown) => {
        this.defaultAgent = undefined;
        throw error;
      },
    );
    return this.defaultAgent;
  }

  private async send(
    scope: CallScope,
    method: string,
    path: string,
    body: unknown,
    accept: string,
    extraHeaders: Record<string, string> = {},
  ): Promise<Response> {
    const headers: Record<string, string> = { ...extraHeaders, accept };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (this.authSecret) headers.authorization = `Bearer ${this.authSecret}`;
    const payload = body === undefined ? null : JSON.stringify(body);
    for (let attempt = 1; ; attempt++) {
      const extra = this.headerHook ? await this.headerHook({ method, path, attempt }) : undefined;
      const fetchImpl = this.fetchImpl;
      const response = await fetchImpl(this.baseUrl + path, { method, headers: mergeHeaders(headers, extra), body: payload, signal: scope.signal });
      if (response.ok) return response;
      const error = await errorFromResponse(response);
      // A replayed failure is final for its Idempotency-Key: another attempt would replay it again.
      const replayed = response.headers.get(REPLAYED_HEADER) === "true";
      const delay = this.retry && !replayed ? retryDelay(this.retry, error, attempt) : undefined;
      if (delay === undefined) throw error;
      await pause(delay, scope.signal);
    }
  }

  private async requestJson(
    method: string,
    path: string,
    body: unknown,
    options: Pick<CallOptions, "signal">,
    idempotencyKey?: string,
  ): Promise<unknown> {
    const scope = new CallScope(options.signal);
    try {
      scope.throwIfCancelled();
      scope.arm(this.timeout, () => `no complete answer from agenthost within ${this.timeout} ms (${method} ${path})`);
      const response = await this.send(
        scope,
        method,
        path,
        body,
        "application/json",
        idempotencyKey === undefined ? {} : { [IDEMPOTENCY_KEY_HEADER]: idempotencyKey },
      );
      const text = await response.text();
      if (text.trim() === "") return {};
      try {
        return JSON.parse(text) as unknown;
      } catch (error) {
        throw new AgentClientError(`agenthost answered ${method} ${path} with a body that is not JSON`, {
          kind: "protocol",
          detail: text,
          cause: error,
        });
      }
    } catch (error) {
      throw scope.translate(error);
    } finally {
      scope.dispose();
    }
  }

  private async *events(
    route: string,
    protocol: "SSE" | "JSON Lines",
    message: MessageContent,
    options: StreamOptions,
  ): AsyncGenerator<StreamItem, void, undefined> {
    const scope = new CallScope(options.signal);
    let ids: { requestId: string | null; runId: string | null } = { requestId: null, runId: null };
    try {
      scope.throwIfCancelled();
      const path = (await this.agentPrefix(options)) + route;
      const body = { ...runBody(message, options), stream_tokens: options.stream_tokens ?? true };
      const accept = protocol === "SSE" ? "text/event-stream" : "application/jsonl, application/x-ndjson";
      scope.arm(this.timeout, () => `agenthost did not start the stream within ${this.timeout} ms (POST ${path})`);
      const response = await this.send(scope, "POST", path, body, accept);
      scope.disarm();
      ids = idsOf(response);
      if (!response.body) throw unexpected(`POST ${path}`, "a streamed body");
      const lines = readLines(
        response.body,
        scope,
        this.streamTimeout,
        () => `the stream was silent for ${this.streamTimeout} ms (streamTimeout)`,
      );
      if (protocol === "SSE") {
        for await (const frame of decodeSse(lines)) {
          if (frame.done) return;
          const item = readEvent(frame.data, protocol);
          if (item !== undefined) yield item;
        }
      } else {
        for await (const line of lines) {
          if (line.trim() === "") continue;
          const item = readEvent(line, protocol);
          if (item !== undefined) yield item;
        }
      }
    } catch (error) {
      throw withIds(scope.translate(error), ids);
    } finally {
      scope.dispose();
    }
  }

  /**
   * A resumable stream: started with `stream_resumable`, and picked up again after a dropped
   * connection from the last event received (`GET /runs/{run_id}/stream` with Last-Event-ID, or
   * `/stream/jsonl?after=`), so no event is yielded twice or lost.
   */
  private async *resumableEvents(
    protocol: "SSE" | "JSON Lines",
    message: MessageContent,
    options: StreamOptions,
  ): AsyncGenerator<StreamItem, void, undefined> {
    const threadId = options.thread_id ?? newThreadId();
    const maxAttempts = options.resumeAttempts ?? 5;
    const sse = protocol === "SSE";
    const accept = sse ? "text/event-stream" : "application/jsonl, application/x-ndjson";
    let ids: { requestId: string | null; runId: string | null } = { requestId: null, runId: null };
    let last = 0;
    let attempts = 0;
    for (;;) {
      const scope = new CallScope(options.signal);
      try {
        scope.throwIfCancelled();
        const prefix = await this.agentPrefix(options);
        let response: Response;
        if (ids.runId === null) {
          const path = prefix + (sse ? "/stream" : "/stream/jsonl");
          const body = { ...runBody(message, { ...options, thread_id: threadId }), stream_tokens: options.stream_tokens ?? true, stream_resumable: true };
          scope.arm(this.timeout, () => `agenthost did not start the stream within ${this.timeout} ms (POST ${path})`);
          response = await this.send(scope, "POST", path, body, accept);
        } else {
          const params = new URLSearchParams({ thread_id: threadId });
          if (options.user_id !== undefined) params.set("user_id", options.user_id);
          if (!sse) params.set("after", String(last));
          const path = `${prefix}/runs/${encodeURIComponent(ids.runId)}/stream${sse ? "" : "/jsonl"}?${params}`;
          scope.arm(this.timeout, () => `agenthost did not resume the stream within ${this.timeout} ms (GET ${path})`);
          response = await this.send(scope, "GET", path, undefined, accept, sse ? { "last-event-id": String(last) } : {});
        }
        scope.disarm();
        const answered = idsOf(response);
        ids = { requestId: answered.requestId, runId: ids.runId ?? answered.runId };
        if (!response.body) throw unexpected("the stream", "a streamed body");
        const lines = readLines(response.body, scope, this.streamTimeout, () => `the stream was silent for ${this.streamTimeout} ms (streamTimeout)`);
        for await (const frame of positionedFrames(lines, protocol)) {
          if (frame.done) return;
          if (frame.seq !== undefined) last = frame.seq;
          attempts = 0;
          if (frame.item !== undefined) yield frame.item;
        }
        return;
      } catch (error) {
        const translated = scope.translate(error);
        if (ids.runId === null || !mayResume(translated) || attempts >= maxAttempts) throw withIds(translated, ids);
        attempts++;
      } finally {
        scope.dispose();
      }
      await pause(Math.min(100 * 2 ** (attempts - 1), 2_000), options.signal);
    }
  }
}

function runBody(message: MessageContent, options: RunOptions): Record<string, unknown> {
  const body: Record<string, unknown> = { input: options.resume === undefined ? { message } : { message, resume: options.resume } };
  for (const field of RUN_FIELDS) {
    if (options[field] !== undefined) body[field] = options[field];
  }
  return body;
}

function asObject(body: unknown): JsonObject {
  return isRecord(body) ? body : { value: body };
}

function unexpected(what: string, expected: string): AgentClientError {
  return new AgentClientError(`agenthost answered ${what} without ${expected}`, { kind: "protocol" });
}
