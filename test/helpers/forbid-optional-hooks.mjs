// Module resolution hooks (node:module register): refuse, by resolved URL, every package agenthost
// loads only when a setting asks for it: the provider SDKs, Langfuse, the OpenTelemetry SDK and
// exporters (the API package is LangChain's own dependency, not an integration) with the gRPC
// exporter's gRPC and protobuf libraries, and BullMQ.
const OPTIONAL = /\/node_modules\/(@langchain\/(?:openai|anthropic|google-genai)|@langfuse\/[^/]+|@opentelemetry\/(?!api\/)[^/]+|@grpc\/[^/]+|protobufjs|bullmq)\//;

export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  const match = OPTIONAL.exec(resolved.url);
  if (match) throw new Error(`an optional integration was loaded: ${match[1]} (${resolved.url}, from ${context.parentURL})`);
  return resolved;
}
