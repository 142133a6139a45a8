import type { SpanExporter } from "@opentelemetry/sdk-trace-base";
import { ConfigError } from "../config/load.ts";
import type { OtlpProtocol } from "../config/schema.ts";

/** Where and how traces are exported: the protocol and the URL (or gRPC target) the exporter is given. */
export interface TracesExport {
  readonly protocol: OtlpProtocol;
  readonly url: string;
}

/** OTEL_EXPORTER_OTLP_HEADERS: `key=value` pairs separated by commas, values percent-encoded. */
export function parseOtlpHeaders(raw: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of (raw ?? "").split(",")) {
    const at = pair.indexOf("=");
    if (at <= 0) continue;
    headers[pair.slice(0, at).trim()] = decodeURIComponent(pair.slice(at + 1).trim());
  }
  return headers;
}

/**
 * OpenTelemetry's own OTLP span exporter for the protocol. Each exporter package is imported only
 * when its protocol is chosen, so a service exporting over HTTP never loads gRPC. The headers go as
 * HTTP headers, or as gRPC metadata.
 */
export async function createSpanExporter(target: TracesExport, headers: Record<string, string>): Promise<SpanExporter> {
  switch (target.protocol) {
    case "http/protobuf": {
      const { OTLPTraceExporter } = await import("@opentelemetry/exporter-trace-otlp-proto");
      return new OTLPTraceExporter({ url: target.url, headers });
    }
    case "http/json": {
      const { OTLPTraceExporter } = await import("@opentelemetry/exporter-trace-otlp-http");
      return new OTLPTraceExporter({ url: target.url, headers });
    }
    case "grpc": {
      const [{ OTLPTraceExporter }, { Metadata }] = await Promise.all([
        import("@opentelemetry/exporter-trace-otlp-grpc"),
        import("@grpc/grpc-js"),
      ]);
      const metadata = new Metadata();
      for (const [key, value] of Object.entries(headers)) {
        try {
          metadata.set(key, value);
        } catch {
          // gRPC metadata takes printable ASCII only, under lower-case keys of letters, digits, - _ and .
          throw new ConfigError([`OTEL_EXPORTER_OTLP_HEADERS has "${key}", which gRPC cannot send as metadata (printable ASCII only)`]);
        }
      }
      // An http:// target is plaintext, https:// is TLS (the exporter decides from the scheme).
      return new OTLPTraceExporter({ url: target.url, metadata });
    }
  }
}
