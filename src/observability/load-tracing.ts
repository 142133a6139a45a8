import type { Config, OtlpProtocol } from "../config/schema.ts";
import type { TracesExport } from "./otlp-exporters.ts";
import type { Tracing } from "./tracing.ts";

/** The OpenTelemetry specification's default protocol, the one its other SDKs and collectors expect. */
export const DEFAULT_OTLP_PROTOCOL: OtlpProtocol = "http/protobuf";

type TracesSettings = Pick<
  Config,
  | "OTEL_SDK_DISABLED"
  | "OTEL_EXPORTER_OTLP_ENDPOINT"
  | "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
  | "OTEL_EXPORTER_OTLP_PROTOCOL"
  | "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
>;

/**
 * Where the configuration says to export traces, or undefined when tracing is off (no endpoint, or
 * OTEL_SDK_DISABLED). As the OTLP exporter specification says: the traces variables win over the
 * general ones; over HTTP the general endpoint is a base URL that `/v1/traces` is appended to, while
 * the traces endpoint is used as it is; over gRPC either names the collector (`http://host:4317`) and
 * is used as it is.
 */
export function tracesExport(config: TracesSettings): TracesExport | undefined {
  if (config.OTEL_SDK_DISABLED) return undefined;
  const protocol = config.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? config.OTEL_EXPORTER_OTLP_PROTOCOL ?? DEFAULT_OTLP_PROTOCOL;
  if (config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return { protocol, url: config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT };
  const base = config.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!base) return undefined;
  return { protocol, url: protocol === "grpc" ? base : `${base.replace(/\/+$/, "")}/v1/traces` };
}

/**
 * The worker's tracing, or undefined when no OTLP endpoint is configured (the SDK then stays
 * unloaded). Only the chosen protocol's exporter is loaded.
 */
export async function createTracing(config: Config): Promise<Tracing | undefined> {
  const target = tracesExport(config);
  if (!target) return undefined;
  const [{ createOtelTracing }, { createSpanExporter, parseOtlpHeaders }] = await Promise.all([
    import("./otel-tracing.ts"),
    import("./otlp-exporters.ts"),
  ]);
  const exporter = await createSpanExporter(target, parseOtlpHeaders(config.OTEL_EXPORTER_OTLP_HEADERS));
  return createOtelTracing(config, exporter);
}
