import http from "node:http";
import type { AddressInfo } from "node:net";
import { Server, ServerCredentials, type Metadata, type sendUnaryData, type ServerUnaryCall, type ServiceDefinition } from "@grpc/grpc-js";
import { decodeTraceExportRequest, encodeTraceExportResponse, TRACE_EXPORT_METHOD } from "./otlp-protobuf.ts";

/** One span as an OTLP export carries it, with its attributes as plain values. */
export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string | undefined;
  /** The spans this one links to (trace id and span id). */
  readonly links: Array<{ readonly traceId: string; readonly spanId: string }>;
  readonly name: string;
  readonly kind: number;
  readonly attributes: Record<string, string | number | boolean>;
  readonly events: string[];
  readonly status: { code?: number; message?: string };
  readonly resource: Record<string, string | number | boolean>;
}

/** How an export arrived: the OTLP protocol the exporter spoke. */
export type ReceivedProtocol = "http/json" | "http/protobuf" | "grpc";

export interface OtlpReceiver {
  /** The endpoint to configure: the HTTP base URL (`/v1/traces` below it), or the gRPC target. */
  readonly url: string;
  readonly spans: ReceivedSpan[];
  /** Every export body as it arrived (binary ones read as UTF-8), for checks on what must never be sent. */
  readonly bodies: string[];
  /** The protocol of each export, in order. */
  readonly protocols: ReceivedProtocol[];
  /** Headers (gRPC: metadata) of the last export. */
  lastHeaders: http.IncomingHttpHeaders | undefined;
  /** Resolves at the next export received. */
  nextExport(): Promise<void>;
  close(): Promise<void>;
}

type AnyValue = { stringValue?: string; intValue?: number | string; doubleValue?: number; boolValue?: boolean };
type KeyValue = { key: string; value?: AnyValue };

/** An ExportTraceServiceRequest as OTLP/JSON writes it (binary ones are converted to this shape). */
type ExportedTraces = {
  resourceSpans: Array<{
    resource?: { attributes?: KeyValue[] };
    scopeSpans: Array<{
      spans: Array<{
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        links?: Array<{ traceId: string; spanId: string }>;
        name: string;
        kind: number;
        attributes?: KeyValue[];
        events?: Array<{ name: string }>;
        status?: { code?: number; message?: string };
      }>;
    }>;
  }>;
};

function plain(attributes: KeyValue[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value = {} } of attributes ?? []) {
    out[key] = value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : undefined) ?? value.doubleValue ?? value.boolValue ?? "";
  }
  return out;
}

/** The receiver's record of exports, whatever carried them. */
function recorder(url: string, close: () => Promise<void>): { receiver: OtlpReceiver; record(protocol: ReceivedProtocol, body: Buffer, exported: unknown, headers: http.IncomingHttpHeaders): void } {
  let waiters: Array<() => void> = [];
  const receiver: OtlpReceiver = {
    url,
    spans: [],
    bodies: [],
    protocols: [],
    lastHeaders: undefined,
    nextExport: () => new Promise<void>((resolve) => waiters.push(resolve)),
    close,
  };
  const record = (protocol: ReceivedProtocol, body: Buffer, exported: unknown, headers: http.IncomingHttpHeaders) => {
    receiver.bodies.push(body.toString("utf8"));
    receiver.protocols.push(protocol);
    receiver.lastHeaders = headers;
    for (const resourceSpans of (exported as ExportedTraces).resourceSpans) {
      const resource = plain(resourceSpans.resource?.attributes);
      for (const scope of resourceSpans.scopeSpans) {
        for (const span of scope.spans) {
          receiver.spans.push({
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId || undefined,
            links: (span.links ?? []).map((link) => ({ traceId: link.traceId, spanId: link.spanId })),
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
    const woken = waiters;
    waiters = [];
    for (const wake of woken) wake();
  };
  return { receiver, record };
}

/**
 * A local OTLP/HTTP receiver: decodes each export posted to /v1/traces, in JSON (`application/json`)
 * or binary protobuf (`application/x-protobuf`), and keeps its spans.
 */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const type = String(req.headers["content-type"]);
      const protocol = type.startsWith("application/json") ? "http/json" : type.startsWith("application/x-protobuf") ? "http/protobuf" : undefined;
      if (req.method !== "POST" || req.url !== "/v1/traces" || !protocol) {
        res.writeHead(404).end();
        return;
      }
      const body = Buffer.concat(chunks);
      if (protocol === "http/json") {
        record(protocol, body, JSON.parse(body.toString("utf8")), req.headers);
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      } else {
        record(protocol, body, decodeTraceExportRequest(body), req.headers);
        res.writeHead(200, { "content-type": "application/x-protobuf" }).end(encodeTraceExportResponse());
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { receiver, record } = recorder(url, () => new Promise<void>((resolve) => server.close(() => resolve())));
  return receiver;
}

/** Metadata as headers: each key's values, joined as HTTP joins repeated headers. */
function metadataHeaders(metadata: Metadata): http.IncomingHttpHeaders {
  const headers: http.IncomingHttpHeaders = {};
  for (const [key, value] of Object.entries(metadata.toJSON())) headers[key] = value.map(String).join(", ");
  return headers;
}

/**
 * A local OTLP/gRPC receiver: a gRPC server (plaintext, HTTP/2) serving the collector's
 * TraceService/Export, decoding each request's protobuf and keeping its spans.
 */
export async function startOtlpGrpcReceiver(): Promise<OtlpReceiver> {
  const server = new Server();
  // The request stays as bytes here, so the receiver keeps the body as it came and decodes it itself.
  const traceService: ServiceDefinition = {
    Export: {
      path: TRACE_EXPORT_METHOD,
      requestStream: false,
      responseStream: false,
      requestDeserialize: (bytes: Buffer) => bytes,
      requestSerialize: (bytes: Buffer) => bytes,
      responseSerialize: (bytes: Uint8Array) => Buffer.from(bytes),
      responseDeserialize: (bytes: Buffer) => bytes,
    },
  };
  server.addService(traceService, {
    Export(call: ServerUnaryCall<Buffer, Uint8Array>, callback: sendUnaryData<Uint8Array>) {
      record("grpc", call.request, decodeTraceExportRequest(call.request), metadataHeaders(call.metadata));
      callback(null, encodeTraceExportResponse());
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
  );
  const { receiver, record } = recorder(`http://127.0.0.1:${port}`, () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())));
  return receiver;
}
