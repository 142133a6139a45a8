// OTLP's trace export messages in binary protobuf, decoded with protobufjs from a schema that keeps the
// field numbers and types of opentelemetry-proto (collector/trace/v1/trace_service.proto and the trace,
// resource and common messages it uses), in one package. A field the schema leaves out is skipped by
// the decoder; a field on the wrong number or wire type makes decoding fail, so a test never passes on
// bytes the exporter did not encode as OTLP.
import protobuf from "protobufjs";

const SCHEMA = `
syntax = "proto3";
package otlp;

message AnyValue {
  oneof value {
    string string_value = 1;
    bool bool_value = 2;
    int64 int_value = 3;
    double double_value = 4;
    ArrayValue array_value = 5;
    KeyValueList kvlist_value = 6;
    bytes bytes_value = 7;
  }
}
message ArrayValue { repeated AnyValue values = 1; }
message KeyValueList { repeated KeyValue values = 1; }
message KeyValue { string key = 1; AnyValue value = 2; }

message InstrumentationScope {
  string name = 1;
  string version = 2;
  repeated KeyValue attributes = 3;
  uint32 dropped_attributes_count = 4;
}
message Resource {
  repeated KeyValue attributes = 1;
  uint32 dropped_attributes_count = 2;
}

enum SpanKind {
  SPAN_KIND_UNSPECIFIED = 0;
  SPAN_KIND_INTERNAL = 1;
  SPAN_KIND_SERVER = 2;
  SPAN_KIND_CLIENT = 3;
  SPAN_KIND_PRODUCER = 4;
  SPAN_KIND_CONSUMER = 5;
}
enum StatusCode {
  STATUS_CODE_UNSET = 0;
  STATUS_CODE_OK = 1;
  STATUS_CODE_ERROR = 2;
}
message Status {
  string message = 2;
  StatusCode code = 3;
}
message Event {
  fixed64 time_unix_nano = 1;
  string name = 2;
  repeated KeyValue attributes = 3;
  uint32 dropped_attributes_count = 4;
}
message Link {
  bytes trace_id = 1;
  bytes span_id = 2;
  string trace_state = 3;
  repeated KeyValue attributes = 4;
  uint32 dropped_attributes_count = 5;
  fixed32 flags = 6;
}
message Span {
  bytes trace_id = 1;
  bytes span_id = 2;
  string trace_state = 3;
  bytes parent_span_id = 4;
  string name = 5;
  SpanKind kind = 6;
  fixed64 start_time_unix_nano = 7;
  fixed64 end_time_unix_nano = 8;
  repeated KeyValue attributes = 9;
  uint32 dropped_attributes_count = 10;
  repeated Event events = 11;
  uint32 dropped_events_count = 12;
  repeated Link links = 13;
  uint32 dropped_links_count = 14;
  Status status = 15;
  fixed32 flags = 16;
}
message ScopeSpans {
  InstrumentationScope scope = 1;
  repeated Span spans = 2;
  string schema_url = 3;
}
message ResourceSpans {
  Resource resource = 1;
  repeated ScopeSpans scope_spans = 2;
  string schema_url = 3;
}

message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
message ExportTracePartialSuccess {
  int64 rejected_spans = 1;
  string error_message = 2;
}
message ExportTraceServiceResponse { ExportTracePartialSuccess partial_success = 1; }
`;

const root = protobuf.parse(SCHEMA).root;
const request = root.lookupType("otlp.ExportTraceServiceRequest");
const response = root.lookupType("otlp.ExportTraceServiceResponse");

/** The gRPC method the OTLP trace exporter calls. */
export const TRACE_EXPORT_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

type Decoded = { resourceSpans?: Array<{ scopeSpans?: Array<{ spans?: Array<Record<string, unknown>> }> }> };

/**
 * An ExportTraceServiceRequest in binary protobuf, as the OTLP/JSON document of the same request:
 * camelCase fields, 64-bit integers as decimal strings, trace and span ids as hex (OTLP/JSON's rule
 * for ids; protobufjs writes bytes in base64).
 */
export function decodeTraceExportRequest(bytes: Uint8Array): unknown {
  const decoded = request.toObject(request.decode(bytes), { longs: String, enums: Number, bytes: String }) as Decoded;
  const hex = (base64: unknown) => (typeof base64 === "string" && base64 !== "" ? Buffer.from(base64, "base64").toString("hex") : undefined);
  for (const resourceSpans of decoded.resourceSpans ?? []) {
    for (const scope of (resourceSpans.scopeSpans ??= [])) {
      for (const span of (scope.spans ??= [])) {
        span.traceId = hex(span.traceId);
        span.spanId = hex(span.spanId);
        span.parentSpanId = hex(span.parentSpanId);
        for (const link of (span.links as Array<Record<string, unknown>> | undefined) ?? []) {
          link.traceId = hex(link.traceId);
          link.spanId = hex(link.spanId);
        }
      }
    }
  }
  return { resourceSpans: decoded.resourceSpans ?? [] };
}

/** An ExportTraceServiceResponse accepting every span, in binary protobuf. */
export function encodeTraceExportResponse(): Uint8Array {
  return response.encode(response.create({})).finish();
}
