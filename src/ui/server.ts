import { readFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { z } from "zod";
import { AgentClient, AgentClientError, type FetchLike } from "../client/index.ts";
import { toBrowserError } from "./browser-view.ts";
import { ChatApi, chatRequest, feedbackRequest } from "./chat-api.ts";
import type { ChatUiConfig } from "../config/chat-ui.ts";
import { FeedbackTokens } from "./feedback-tokens.ts";

const STATIC_FILES: Readonly<Record<string, { file: string; type: string }>> = {
  "/": { file: "index.html", type: "text/html; charset=utf-8" },
  "/app.js": { file: "app.js", type: "text/javascript; charset=utf-8" },
  "/markdown.js": { file: "markdown.js", type: "text/javascript; charset=utf-8" },
  "/style.css": { file: "style.css", type: "text/css; charset=utf-8" },
};

const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

const MAX_BODY_BYTES = 512 * 1024;

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
}

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
  const api = new ChatApi(client, config.userId, new FeedbackTokens());
  return createServer((req, res) => {
    for (const [header, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(header, value);
    route(api, req, res).catch((error: unknown) => fail(res, error));
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

async function route(api: ChatApi, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "http://chat-ui.invalid");
  const method = req.method ?? "GET";
  const cancel = new AbortController();
  res.on("close", () => cancel.abort());

  if (method === "GET" || method === "HEAD") {
    const file = STATIC_FILES[url.pathname];
    if (file) return serveFile(res, file.file, file.type);
    if (url.pathname === "/api/agents") return sendJson(res, 200, await api.agents(cancel.signal));
    if (url.pathname === "/api/history") {
      const agent = url.searchParams.get("agent");
      const threadId = url.searchParams.get("thread_id");
      if (!agent || !threadId) throw new BadRequest("agent and thread_id are required");
      return sendJson(res, 200, await api.history(agent, threadId, cancel.signal));
    }
  }
  if (method === "POST" && (url.pathname === "/api/chat" || url.pathname === "/api/feedback")) {
    checkSameOrigin(req);
    const body = await readJson(req);
    if (url.pathname === "/api/chat") return api.chat(parse(chatRequest, body), res);
    await api.feedback(parse(feedbackRequest, body), cancel.signal);
    return sendJson(res, 200, { ok: true });
  }
  sendJson(res, 404, { error: { message: "Not found.", kind: "internal", status: 404, error_code: null, retry_after: null } });
}

async function serveFile(res: ServerResponse, file: string, type: string): Promise<void> {
  const body = await readFile(new URL(`./public/${file}`, import.meta.url));
  res.writeHead(200, { "content-type": type, "content-length": body.length, "cache-control": "no-cache" });
  res.end(body);
}

/**
 * The API changes state with the page's token, so only the page itself may call it: a JSON content
 * type (which a cross-site form cannot send without a preflight this server never grants) and, when
 * the browser names one, an Origin equal to this server's.
 */
function checkSameOrigin(req: IncomingMessage): void {
  const type = req.headers["content-type"] ?? "";
  if (!/^application\/json\b/i.test(type)) throw new BadRequest("send JSON (content-type: application/json)", 415);
  const origin = req.headers.origin;
  if (origin !== undefined && origin !== `http://${req.headers.host}` && origin !== `https://${req.headers.host}`) {
    throw new BadRequest("cross-origin requests are refused", 403);
  }
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new BadRequest("request body too large", 413);
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
