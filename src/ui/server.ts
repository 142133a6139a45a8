import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { z } from "zod";
import { AgentClient, AgentClientError, type FetchLike } from "../client/index.ts";
import { toBrowserError } from "./browser-view.ts";
import { ChatApi, chatRequest, clearRequest, cancelRequest, decodedBytes, feedbackRequest } from "./chat-api.ts";
import { DEFAULT_MAX_ATTACHMENTS, DEFAULT_MAX_UPLOAD_BYTES, type ChatUiConfig } from "../config/chat-ui.ts";
import { AllowedHosts, type HostAndPort } from "./allowed-hosts.ts";
import { AnswerRelays } from "./answer-relay.ts";
import { FeedbackTokens } from "./feedback-tokens.ts";

const requireFrom = createRequire(import.meta.url);
const publicDir = fileURLToPath(new URL("./public/", import.meta.url));
const markedDir = path.dirname(requireFrom.resolve("marked"));
const purifyDir = path.dirname(requireFrom.resolve("dompurify"));

const JS = "text/javascript; charset=utf-8";

/** The page's files, and the browser builds of marked and DOMPurify from node_modules (no third-party host). */
const STATIC_FILES: Readonly<Record<string, { file: string; type: string }>> = {
  "/": { file: path.join(publicDir, "index.html"), type: "text/html; charset=utf-8" },
  "/app.js": { file: path.join(publicDir, "app.js"), type: JS },
  "/markdown.js": { file: path.join(publicDir, "markdown.js"), type: JS },
  "/style.css": { file: path.join(publicDir, "style.css"), type: "text/css; charset=utf-8" },
  "/favicon.svg": { file: path.join(publicDir, "favicon.svg"), type: "image/svg+xml" },
  // Where browsers look when a page names no icon (the page names /favicon.svg).
  "/favicon.ico": { file: path.join(publicDir, "favicon.svg"), type: "image/svg+xml" },
  "/vendor/marked.js": { file: path.join(markedDir, "marked.esm.js"), type: JS },
  "/vendor/purify.js": { file: path.join(purifyDir, "purify.es.mjs"), type: JS },
};

const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

/** What a request body may hold besides attachments (the message, names). */
const BODY_OVERHEAD_BYTES = 512 * 1024;

/** What the page may attach to one message. */
interface UploadLimits {
  max_attachments: number;
  max_upload_bytes: number;
}

/**
 * The page's upload limits. Attachments per message are agenthost's (its /info names them, read at
 * each page load); the page's own MULTIMODAL_MAX_ATTACHMENTS can only lower them, and stands in (or
 * DEFAULT_MAX_ATTACHMENTS) until agenthost has named its own.
 */
class PageLimits {
  readonly current: UploadLimits;

  constructor(private readonly own: number | undefined, maxUploadBytes: number) {
    this.current = { max_attachments: own ?? DEFAULT_MAX_ATTACHMENTS, max_upload_bytes: maxUploadBytes };
  }

  learn(service: number | undefined): UploadLimits {
    if (service !== undefined) this.current.max_attachments = Math.min(service, this.own ?? service);
    return { ...this.current };
  }
}

class BadRequest extends Error {
  constructor(
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

export interface ChatServerOptions {
  /** Passed to the AgentClient (tests inject one; the default is the global fetch). */
  fetch?: FetchLike;
  /** How long an answer waits for its browser to reconnect before its run is stopped (default 15 s). */
  reconnectGraceMs?: number;
}

/** How long a finished answer stays available to a browser that reconnects late. */
const ANSWER_KEEP_MS = 60_000;

/**
 * The chat page's server: static files and a small JSON API for the page's own script. It alone holds
 * AUTH_SECRET and CHAT_UI_USER_ID and reaches agenthost through AgentClient.
 */
export function createChatServer(config: ChatUiConfig, options: ChatServerOptions = {}): Server {
  const client = new AgentClient({
    baseUrl: config.agenthostUrl,
    authSecret: config.authSecret ?? "",
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  const relays = new AnswerRelays(options.reconnectGraceMs ?? 15_000, ANSWER_KEEP_MS);
  const api = new ChatApi(client, config.userId, new FeedbackTokens(), relays);
  const limits = new PageLimits(config.maxAttachments, config.maxUploadBytes ?? DEFAULT_MAX_UPLOAD_BYTES);
  const hosts = new AllowedHosts(config.host, config.allowedHosts);
  return createServer((req, res) => {
    for (const [header, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(header, value);
    // Before anything else, static files included: a DNS-rebinding site gets not even the page.
    const host = hosts.hostOf(req);
    if (host === undefined) return refuseHost(res);
    route(api, limits, hosts, host, req, res).catch((error: unknown) => fail(res, error));
  });
}

/** Listen and report the page's URL; `close` ends open connections too. */
export async function startChatServer(
  config: ChatUiConfig,
  options: ChatServerOptions = {},
): Promise<{ url: string; server: Server; close(): Promise<void> }> {
  const server = createChatServer(config, options);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.port, config.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(":") ? `[${address}]` : address;
  return {
    url: `http://${host}:${port}`,
    server,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

/**
 * 421 Misdirected Request: this server does not serve the name the request was sent to. The body says
 * which setting adds a name, never echoing the header (it may be anything).
 */
function refuseHost(res: ServerResponse): void {
  const message =
    "This chat page does not answer under the host name this request was sent to. " +
    "Open it as localhost or 127.0.0.1, or add the name to CHAT_UI_ALLOWED_HOSTS.";
  sendJson(res, 421, { error: { message, kind: "request", status: 421, error_code: "host_not_allowed", retry_after: null } });
}

async function route(
  api: ChatApi,
  pageLimits: PageLimits,
  hosts: AllowedHosts,
  host: HostAndPort,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const limits = pageLimits.current;
  const url = new URL(req.url ?? "/", "http://chat-ui.invalid");
  const method = req.method ?? "GET";
  const cancel = new AbortController();
  res.on("close", () => cancel.abort());

  if (method === "GET" || method === "HEAD") {
    const file = STATIC_FILES[url.pathname];
    if (file) return serveFile(res, file.file, file.type);
    if (url.pathname === "/api/agents") {
      const { max_attachments, ...info } = await api.agents(cancel.signal);
      return sendJson(res, 200, { ...info, limits: pageLimits.learn(max_attachments) });
    }
    if (url.pathname === "/api/chat/follow") {
      const id = required(url, "stream_id");
      if (!api.follow(id, optionalInt(url, "after") ?? 0, res)) throw new BadRequest("this answer is no longer available", 404);
      return;
    }
    if (url.pathname === "/api/threads") {
      const agent = required(url, "agent");
      return sendJson(res, 200, await api.threads(agent, optionalInt(url, "offset"), cancel.signal));
    }
    if (url.pathname === "/api/history") {
      const agent = required(url, "agent");
      const threadId = required(url, "thread_id");
      return sendJson(res, 200, await api.history(agent, threadId, optionalInt(url, "before"), cancel.signal));
    }
  }
  if (method === "POST" && url.pathname.startsWith("/api/")) {
    checkSameOrigin(req, hosts, host);
    const body = await readJson(req, Math.ceil((limits.max_upload_bytes * 4) / 3) + BODY_OVERHEAD_BYTES);
    switch (url.pathname) {
      case "/api/chat":
        return api.chat(checkAttachments(parse(chatRequest, body), limits), res);
      case "/api/feedback":
        return sendJson(res, 200, await api.feedback(parse(feedbackRequest, body), cancel.signal));
      case "/api/cancel":
        return sendJson(res, 200, await api.cancel(parse(cancelRequest, body), cancel.signal));
      case "/api/clear":
        await api.clear(parse(clearRequest, body), cancel.signal);
        return sendJson(res, 200, { ok: true });
    }
  }
  sendJson(res, 404, { error: { message: "Not found.", kind: "internal", status: 404, error_code: null, retry_after: null } });
}

function required(url: URL, name: string): string {
  const value = url.searchParams.get(name);
  if (!value) throw new BadRequest(`${name} is required`);
  return value;
}

function optionalInt(url: URL, name: string): number | undefined {
  const value = url.searchParams.get(name);
  if (value === null) return undefined;
  if (!/^\d{1,9}$/.test(value)) throw new BadRequest(`${name} must be a whole number`);
  return Number(value);
}

async function serveFile(res: ServerResponse, file: string, type: string): Promise<void> {
  const body = await readFile(file);
  res.writeHead(200, { "content-type": type, "content-length": body.length, "cache-control": "no-cache" });
  res.end(body);
}

/**
 * The API changes state with the page's token, so only the page itself may call it: a JSON content
 * type (which a cross-site form cannot send without a preflight this server never grants) and, when
 * the browser names one, an Origin equal to this server's (the request's Host, already an allowed name).
 */
function checkSameOrigin(req: IncomingMessage, hosts: AllowedHosts, host: HostAndPort): void {
  const type = req.headers["content-type"] ?? "";
  if (!/^application\/json\b/i.test(type)) throw new BadRequest("send JSON (content-type: application/json)", 415);
  const origin = req.headers.origin;
  if (origin !== undefined && !hosts.allowsOrigin(origin, host)) throw new BadRequest("cross-origin requests are refused", 403);
}

function checkAttachments<T extends { attachments?: { base64: string }[] | undefined }>(input: T, limits: UploadLimits): T {
  const attachments = input.attachments ?? [];
  if (attachments.length > limits.max_attachments) {
    throw new BadRequest(`at most ${limits.max_attachments} attachments per message`, 413);
  }
  const bytes = attachments.reduce((sum, a) => sum + decodedBytes(a.base64), 0);
  if (bytes > limits.max_upload_bytes) {
    throw new BadRequest(`the attachments hold ${bytes} bytes; at most ${limits.max_upload_bytes} per message`, 413);
  }
  return input;
}

async function readJson(req: IncomingMessage, limit: number): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new BadRequest("request body too large", 413);
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown;
  } catch {
    throw new BadRequest("the body is not JSON");
  }
}

function parse<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  const result = schema.safeParse(body);
  if (!result.success) {
    throw new BadRequest(result.error.issues.map((i) => `${i.path.join(".") || "body"}: ${i.message}`).join("; "), 422);
  }
  return result.data;
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    "cache-control": "no-store",
  });
  res.end(text);
}

/** Agenthost's status passes through (409, 503, ...); the page's own refusals keep theirs. */
function fail(res: ServerResponse, error: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (error instanceof BadRequest) {
    sendJson(res, error.status, {
      error: { message: error.message, kind: "request", status: error.status, error_code: null, retry_after: null },
    });
    return;
  }
  if (!(error instanceof AgentClientError)) console.error("chat-ui: unexpected failure", error);
  else console.error(`chat-ui: ${error.message}`);
  const view = toBrowserError(error);
  const status = view.status !== null && view.status >= 400 ? view.status : 502;
  const headers: Record<string, string> = {};
  if (view.retry_after !== null) headers["retry-after"] = view.retry_after;
  const text = JSON.stringify({ error: view });
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", ...headers });
  res.end(text);
}
