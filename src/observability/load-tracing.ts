import type { Config } from "../config/schema.ts";
import type { Tracing } from "./tracing.ts";

/** The OTLP traces URL the configuration names, or undefined when tracing is off. */
export function tracesUrl(config: Pick<Config, "OTEL_SDK_DISABLED" | "OTEL_EXPORTER_OTLP_ENDPOINT" | "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT">): string | undefined {
  if (config.OTEL_SDK_DISABLED) return undefined;
  if (config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  if (config.OTEL_EXPORTER_OTLP_ENDPOINT) return `${config.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, "")}/v1/traces`;
  return undefined;
}

/** The worker's tracing, or undefined when no OTLP endpoint is configured (the SDK then stays unloaded). */
export async function createTracing(config: Config): Promise<Tracing | undefined> {
  const url = tracesUrl(config);
  if (!url) return undefined;
  return (await import("./otel-tracing.ts")).createOtelTracing(config, url);
}
