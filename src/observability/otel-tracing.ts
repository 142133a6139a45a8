import {
  context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type Span,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from "@opentelemetry/sdk-trace-base";
import type { Config } from "../config/schema.ts";
import { serviceVersion } from "./build.ts";
import type { ModelCall, ModelCallTracer } from "./model-calls.ts";
import { ensureContextManager } from "./otel-context.ts";
import type { LockWaitTrace, RequestTrace, RunIdentity, RunTrace, Tracing } from "./tracing.ts";

/** Checkpoint backends under their OpenTelemetry `db.system.name`. */
const DB_SYSTEMS: Readonly<Record<string, string>> = { filedb: "sqlite", serverdb: "postgresql", memory: "memory" };

/** A span ends once, whoever ends it first. */
function ender(span: Span): (attributes?: Record<string, string | number>, failed?: string) => void {
  let ended = false;
  return (attributes, failed) => {
    if (ended) return;
    ended = true;
    if (attributes) span.setAttributes(attributes);
    if (failed !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: failed });
    span.end();
  };
}

/** `events` with each step (next, return, throw) run in `ctx`. */
function bindGenerator<T>(events: AsyncGenerator<T, void, undefined>, ctx: Context): AsyncGenerator<T, void, undefined> {
  const bound = {
    next: () => context.with(ctx, () => events.next()),
    return: (value: void) => context.with(ctx, () => events.return(value)),
    throw: (error: unknown) => context.with(ctx, () => events.throw(error)),
    [Symbol.asyncIterator]() {
      return bound;
    },
  };
  return bound as unknown as AsyncGenerator<T, void, undefined>;
}

/**
 * Tracing over the OpenTelemetry SDK: an isolated tracer provider (agenthost does not claim the
 * global one) with a batch processor handing spans to `exporter` (OTLP in the configured protocol,
 * otlp-exporters.ts). Spans: the HTTP request (SERVER), the run inside it, and inside the run the
 * conversation-lock wait, each checkpoint operation and each chat model call (CLIENT). Lock and checkpoint spans are made only under a
 * span, so maintenance work outside requests leaves no stray roots.
 */
export function createOtelTracing(config: Config, exporter: SpanExporter): Tracing {
  ensureContextManager();
  const resource = defaultResource()
    .merge(detectResources({ detectors: [envDetector] }))
    .merge(resourceFromAttributes({ "service.name": config.OTEL_SERVICE_NAME, "service.version": serviceVersion() }));
  const provider = new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] });
  const tracer = provider.getTracer("agenthost", serviceVersion());
  const propagator = new W3CTraceContextPropagator();

  /** Model call spans by LangChain run id, and the newest open one under each parent span (for `outgoing`). */
  const modelSpans = new Map<string, { span: Span; parent: Span | undefined; end: ReturnType<typeof ender> }>();
  const latestModelSpan = new WeakMap<Span, Span>();

  const underSpan = () => trace.getSpan(context.active()) !== undefined;

  const modelCalls: ModelCallTracer = {
    start(call: ModelCall, runId: string) {
      const parentContext = context.active();
      const span = tracer.startSpan(
        `chat ${call.model}`,
        {
          kind: SpanKind.CLIENT,
          attributes: {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": call.provider,
            "gen_ai.request.model": call.model,
            "gen_ai.agent.name": call.agent,
          },
        },
        parentContext,
      );
      const parent = trace.getSpan(parentContext);
      if (parent) latestModelSpan.set(parent, span);
      modelSpans.set(runId, { span, parent, end: ender(span) });
    },
    firstToken(runId: string, call: ModelCall) {
      const open = modelSpans.get(runId);
      if (!open || call.firstToken === undefined) return;
      open.span.addEvent("first_token");
      open.span.setAttribute("agenthost.time_to_first_token_ms", Math.round((call.firstToken - call.started) * 10) / 10);
    },
    end(runId, outcome) {
      const open = modelSpans.get(runId);
      if (!open) return;
      modelSpans.delete(runId);
      if (open.parent && latestModelSpan.get(open.parent) === open.span) latestModelSpan.delete(open.parent);
      if (outcome.ok) {
        const attributes: Record<string, number> = {};
        if (outcome.usage?.input !== undefined) attributes["gen_ai.usage.input_tokens"] = outcome.usage.input;
        if (outcome.usage?.output !== undefined) attributes["gen_ai.usage.output_tokens"] = outcome.usage.output;
        open.end(attributes);
      } else {
        // The error's type only: a provider's message may quote the request.
        open.end({ "error.type": outcome.error.name }, outcome.error.name);
      }
    },
  };

  const startLockWait = (): LockWaitTrace | undefined => {
    if (!underSpan()) return undefined;
    const end = ender(tracer.startSpan("conversation_lock.acquire"));
    return {
      granted: (waitedMs) => end({ "agenthost.lock.outcome": "granted", "agenthost.lock.waited_ms": waitedMs }),
      refused: (reason) => end({ "agenthost.lock.outcome": reason }, reason === "aborted" ? undefined : reason),
      failed: () => end({ "agenthost.lock.outcome": "error" }, "lock_unavailable"),
    };
  };

  return {
    startRequest(req): RequestTrace {
      const parent = propagator.extract(ROOT_CONTEXT, req.headers, defaultTextMapGetter);
      const method = req.method ?? "GET";
      const span = tracer.startSpan(method, { kind: SpanKind.SERVER, attributes: { "http.request.method": method } }, parent);
      const active = trace.setSpan(parent, span);
      const end = ender(span);
      return {
        traceId: span.spanContext().traceId,
        within: (next) => context.with(active, next),
        end({ route, status, errorCode, runId }) {
          span.updateName(`${method} ${route}`);
          const attributes: Record<string, string | number> = { "http.route": route, "http.response.status_code": status };
          if (errorCode) attributes["agenthost.error_code"] = errorCode;
          if (runId) attributes["agenthost.run_id"] = runId;
          end(attributes, status >= 500 ? (errorCode ?? String(status)) : undefined);
        },
      };
    },

    traceparent(): string | undefined {
      if (!trace.getSpan(context.active())) return undefined;
      const carrier: Record<string, string> = {};
      propagator.inject(context.active(), carrier, defaultTextMapSetter);
      return carrier.traceparent;
    },

    startRun(run: RunIdentity): RunTrace {
      // A run another request created (a background run) starts a trace of its own, linked to it.
      const creator = run.createdBy ? trace.getSpanContext(propagator.extract(ROOT_CONTEXT, { traceparent: run.createdBy }, defaultTextMapGetter)) : undefined;
      const parent = run.createdBy ? ROOT_CONTEXT : context.active();
      const span = tracer.startSpan(`invoke_agent ${run.agent.name}`, {
        ...(creator ? { links: [{ context: creator, attributes: { "agenthost.link": "created_by" } }] } : {}),
        attributes: {
          "gen_ai.operation.name": "invoke_agent",
          "gen_ai.agent.name": run.agent.name,
          "gen_ai.conversation.id": run.threadId,
          "agenthost.run_id": run.runId,
        },
      }, parent);
      const active = trace.setSpan(parent, span);
      const end = ender(span);
      return {
        within: (work) => context.with(active, work),
        bindEvents: (events) => bindGenerator(events, active),
        end: (outcome) => end({ "agenthost.outcome": outcome }, outcome === "ok" ? undefined : outcome),
      };
    },

    startLockWait,

    async checkpoint(backend, operation, call) {
      if (!underSpan()) return call();
      const span = tracer.startSpan(`checkpoint ${operation}`, {
        attributes: { "db.system.name": DB_SYSTEMS[backend] ?? backend, "db.operation.name": operation },
      });
      const end = ender(span);
      try {
        const result = await call();
        end();
        return result;
      } catch (error) {
        end({ "error.type": (error as Error | undefined)?.name ?? "Error" }, "checkpoint operation failed");
        throw error;
      }
    },

    modelCalls,

    outgoing() {
      const active = trace.getSpan(context.active());
      if (!active) return undefined;
      const span = latestModelSpan.get(active) ?? active;
      const carrier: Record<string, string> = {};
      propagator.inject(trace.setSpan(context.active(), span), carrier, defaultTextMapSetter);
      if (!carrier.traceparent) return undefined;
      return carrier.tracestate ? { traceparent: carrier.traceparent, tracestate: carrier.tracestate } : { traceparent: carrier.traceparent };
    },

    flush: () => provider.forceFlush(),
    close: () => provider.shutdown(),
  };
}
