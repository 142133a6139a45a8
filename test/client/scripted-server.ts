import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { AgentClientError } from "../../src/client/index.ts";

/** One request the scripted server received. */
export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage["headers"];
  body: string;
  /** Resolves when the client side of this request's connection closed or the response ended. */
  closed: Promise<void>;
}

export type ScriptedHandler = (req: RecordedRequest, res: ServerResponse) => void | Promise<void>;

export interface ScriptedServer {
  url: string;
  requests: RecordedRequest[];
  /** Replace or add a route, keyed "METHOD /path". */
  route(key: string, handler: ScriptedHandler): void;
  close(): Promise<void>;
}

/**
 * A node:http server on 127.0.0.1:0 that answers from a table of "METHOD /path" handlers and records
 * every request. Unknown routes answer 404 `{detail}` like agenthost does.
 */
export async function startScriptedServer(routes: Record<string, ScriptedHandler> = {}): Promise<ScriptedServer> {
  const table = new Map(Object.entries(routes));
  const requests: RecordedRequest[] = [];
  const server = createServer((req, res) => {
    const closed = new Promise<void>((resolve) => {
      res.once("close", () => resolve());
    });
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://scripted");
      const recorded: RecordedRequest = {
        method: req.method ?? "GET",
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
        closed,
      };
      requests.push(recorded);
      const handler = table.get(`${recorded.method} ${recorded.path}`);
      if (!handler) {
        sendJson(res, 404, { detail: `no scripted route for ${recorded.method} ${recorded.path}` });
        return;
      }
      Promise.resolve(handler(recorded, res)).catch((error: unknown) => {
        if (!res.headersSent) sendJson(res, 500, { detail: String(error) });
        else res.destroy();
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    route: (key, handler) => void table.set(key, handler),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

export function startSse(res: ServerResponse): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  res.flushHeaders();
}

export function sseFrame(event: unknown): string {
  return `data: ${typeof event === "string" ? event : JSON.stringify(event)}\n\n`;
}

/** A ChatMessage as agenthost sends it. */
export function aiMessage(content: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: "ai",
    content,
    thread_id: "t-1",
    run_id: "run-1",
    usage_metadata: null,
    response_metadata: {},
    tool_calls: [],
    ...extra,
  };
}

export const INFO = {
  agents: [
    { key: "chatbot-agent", description: "A simple chatbot." },
    { key: "create-agent", description: "Another agent." },
  ],
  default_agent: "chatbot-agent",
};

/** Collect every item of a stream, or the error that ended it together with the items before it. */
export async function drain<T>(items: AsyncIterable<T>): Promise<{ items: T[]; error: unknown }> {
  const seen: T[] = [];
  try {
    for await (const item of items) seen.push(item);
    return { items: seen, error: undefined };
  } catch (error) {
    return { items: seen, error };
  }
}

/** The AgentClientError a call rejected with; fails the test if it resolved or threw anything else. */
export async function failure(call: Promise<unknown>): Promise<AgentClientError> {
  try {
    await call;
  } catch (error) {
    assert.ok(error instanceof AgentClientError, `expected AgentClientError, got ${String(error)}`);
    return error;
  }
  assert.fail("the call succeeded");
}
