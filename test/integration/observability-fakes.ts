import http from "node:http";
import type { AddressInfo } from "node:net";

export interface Received {
  readonly method: string;
  readonly path: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Buffer;
  /** The status the fake answered. */
  status: number;
}

/**
 * A small HTTP server standing in for an observability backend: it records every request and
 * answers what the backend's ingestion API answers. `down = true` makes ingestion fail with 503.
 */
export class FakeBackend {
  readonly received: Received[] = [];
  down = false;
  url = "";
  private readonly server: http.Server;

  constructor(private readonly answer: (request: Received) => { status: number; body: unknown }) {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        const request: Received = { method: req.method ?? "", path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks), status: 0 };
        const { status, body } = this.down && request.method !== "GET" ? { status: 503, body: { message: "down" } } : this.answer(request);
        request.status = status;
        this.received.push(request);
        res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
      });
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Requests to a path starting with `prefix` that succeeded. */
  to(prefix: string, method = "POST"): Received[] {
    return this.received.filter((r) => r.method === method && r.path.startsWith(prefix) && r.status < 300);
  }

  /** Everything the backend was sent, as text (to check that nothing secret arrived). */
  everything(): string {
    return this.received.map((r) => `${r.method} ${r.path}\n${JSON.stringify(r.headers)}\n${r.body.toString("utf8")}`).join("\n");
  }
}

/** Langfuse: OTLP/HTTP JSON traces and the public scores API. */
export function fakeLangfuse(): Promise<FakeBackend> {
  return new FakeBackend((request) => {
    if (request.path.startsWith("/api/public/scores")) return { status: 200, body: { id: "ok" } };
    return { status: 200, body: {} };
  }).start();
}

/** LangSmith: /info, run ingestion (batch, multipart or one by one) and feedback. */
export function fakeLangsmith(): Promise<FakeBackend> {
  return new FakeBackend((request) => {
    if (request.path.startsWith("/info")) return { status: 200, body: { version: "0.0.0-fake", batch_ingest_config: {} } };
    if (request.path.startsWith("/feedback")) return { status: 200, body: JSON.parse(request.body.toString("utf8") || "{}") as unknown };
    return { status: 200, body: {} };
  }).start();
}

/** Spans of OTLP/HTTP JSON export requests. */
export function otlpSpans(requests: Received[]): Array<{ traceId: string; spanId: string; parentSpanId?: string; name: string; attributes: Record<string, unknown> }> {
  const spans = [];
  for (const request of requests) {
    const body = JSON.parse(request.body.toString("utf8")) as {
      resourceSpans?: Array<{ scopeSpans?: Array<{ spans?: Array<{ traceId: string; spanId: string; parentSpanId?: string; name: string; attributes?: Array<{ key: string; value: Record<string, unknown> }> }> }> }>;
    };
    for (const resource of body.resourceSpans ?? []) {
      for (const scope of resource.scopeSpans ?? []) {
        for (const span of scope.spans ?? []) {
          const attributes: Record<string, unknown> = {};
          for (const { key, value } of span.attributes ?? []) attributes[key] = Object.values(value)[0];
          spans.push({ traceId: span.traceId, spanId: span.spanId, parentSpanId: span.parentSpanId, name: span.name, attributes });
        }
      }
    }
  }
  return spans;
}

/** Wait until `check` returns a value (polling), or fail after `ms`. */
export async function eventually<T>(check: () => T | undefined | Promise<T | undefined>, ms = 15_000, what = "condition"): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
