import http from "node:http";
import type { AddressInfo } from "node:net";

/** One span as an OTLP/JSON export carries it, with its attributes as plain values. */
export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string | undefined;
  readonly name: string;
  readonly kind: number;
  readonly attributes: Record<string, string | number | boolean>;
  readonly events: string[];
  readonly status: { code?: number; message?: string };
  readonly resource: Record<string, string | number | boolean>;
}

export interface OtlpReceiver {
  readonly url: string;
  readonly spans: ReceivedSpan[];
  /** Every export body as it arrived, for checks on what must never be sent. */
  readonly bodies: string[];
  /** Headers of the last export. */
  lastHeaders: http.IncomingHttpHeaders | undefined;
  /** Resolves at the next export received. */
  nextExport(): Promise<void>;
  close(): Promise<void>;
}

type AnyValue = { stringValue?: string; intValue?: number | string; doubleValue?: number; boolValue?: boolean };
type KeyValue = { key: string; value: AnyValue };

function plain(attributes: KeyValue[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of attributes ?? []) {
    out[key] = value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : undefined) ?? value.doubleValue ?? value.boolValue ?? "";
  }
  return out;
}

/** A local OTLP/HTTP receiver: decodes each JSON export posted to /v1/traces and keeps its spans. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const bodies: string[] = [];
  let waiters: Array<() => void> = [];
  const receiver: OtlpReceiver = {
    url: "",
    spans,
    bodies,
    lastHeaders: undefined,
    nextExport: () => new Promise<void>((resolve) => waiters.push(resolve)),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/traces" || !String(req.headers["content-type"]).startsWith("application/json")) {
        res.writeHead(404).end();
        return;
      }
      const body = Buffer.concat(chunks).toString("utf8");
      bodies.push(body);
      receiver.lastHeaders = req.headers;
      const exported = JSON.parse(body) as {
        resourceSpans: Array<{
          resource?: { attributes?: KeyValue[] };
          scopeSpans: Array<{
            spans: Array<{
              traceId: string;
              spanId: string;
              parentSpanId?: string;
              name: string;
              kind: number;
              attributes?: KeyValue[];
              events?: Array<{ name: string }>;
              status?: { code?: number; message?: string };
            }>;
          }>;
        }>;
      };
      for (const resourceSpans of exported.resourceSpans) {
        const resource = plain(resourceSpans.resource?.attributes);
        for (const scope of resourceSpans.scopeSpans) {
          for (const span of scope.spans) {
            spans.push({
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId || undefined,
              name: span.name,
              kind: span.kind,
              attributes: plain(span.attributes),
              events: (span.events ?? []).map((e) => e.name),
              status: span.status ?? {},
              resource,
            });
          }
        }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
      const woken = waiters;
      waiters = [];
      for (const wake of woken) wake();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  (receiver as { url: string }).url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return receiver;
}
