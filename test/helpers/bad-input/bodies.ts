import { randomUUID } from "node:crypto";
import { exampleOf, type OpenApiDocument } from "./operations.ts";
import type { Random } from "./random.ts";

/**
 * Valid request bodies, one maker per request schema of /openapi.json, so most mutations start
 * from a request the service would accept and reach the code behind validation. A schema without
 * a maker here (a route added later) gets a schema-shaped body from `exampleOf`.
 */
export interface BodyContext {
  readonly document: OpenApiDocument;
  readonly threads: readonly string[];
  /** Run ids the service has answered with, for feedback. */
  readonly runIds: readonly string[];
}

const words = ["hello", "what is 2+3?", "tell me a story", "résumé", "数字", "🙂 ok", ""];

function message(random: Random): unknown {
  if (random.chance(0.8)) return random.pick(words.filter(Boolean));
  return [
    { type: "text", text: random.pick(words) },
    ...(random.chance(0.5) ? [{ type: "image", url: "https://example.com/cat.png" }] : []),
    ...(random.chance(0.3) ? [{ type: "file", base64: "JVBERi0xLjQK", mime_type: "application/pdf", filename: "a.pdf" }] : []),
  ];
}

function storedMessages(random: Random): unknown[] {
  const out: unknown[] = [];
  const count = random.int(1, 4);
  for (let i = 0; i < count; i++) {
    const kind = random.pick(["human", "ai", "tool-pair", "custom"] as const);
    if (kind === "human") out.push({ type: "human", content: random.pick(words) });
    if (kind === "ai") {
      out.push({
        type: "ai",
        content: random.pick(words),
        usage_metadata: random.chance(0.5) ? { input_tokens: 3, output_tokens: 5, total_tokens: 8 } : null,
        response_metadata: random.chance(0.5) ? { finish_reason: "stop", model_name: "gpt-x", nested: { a: [1, 2, { b: "c" }] } } : null,
      });
    }
    if (kind === "tool-pair") {
      const id = `call-${random.int(0, 1e6)}`;
      out.push({ type: "ai", content: "", tool_calls: [{ name: "add", id, args: { a: 2, b: 3 } }] });
      out.push({ type: "tool", content: "5", tool_call_id: id });
    }
    if (kind === "custom") out.push({ type: "custom", content: "", custom_data: { kind: "note", data: { x: random.int(0, 9) } } });
  }
  return out;
}

function identity(context: BodyContext, random: Random): Record<string, unknown> {
  const out: Record<string, unknown> = { thread_id: random.pick(context.threads) };
  if (random.chance(0.2)) out.user_id = random.pick(["", null, "alice", "bob"]);
  return out;
}

const makers: Record<string, (context: BodyContext, random: Random) => unknown> = {
  InvokeRequest: (context, random) => ({
    input: { message: message(random) },
    ...identity(context, random),
    ...(random.chance(0.15) ? { recursion_limit: random.int(1, 30) } : {}),
    ...(random.chance(0.15) ? { agent_config: { tone: "dry", depth: { a: 1 } } } : {}),
  }),
  StreamRequest: (context, random) => ({
    input: { message: message(random) },
    ...identity(context, random),
    stream_tokens: random.pick([true, false, null]),
  }),
  ResumeRequest: (context, random) => ({
    ...identity(context, random),
    resume: random.pick(["Ada", 42, { decisions: [{ type: "approve" }] }, ["x"]]),
  }),
  ResumeStreamRequest: (context, random) => ({
    ...identity(context, random),
    resume: random.pick(["Ada", "blue", 7]),
    stream_tokens: random.chance(0.5),
  }),
  AddMessagesRequest: (context, random) => ({ ...identity(context, random), messages: storedMessages(random) }),
  ClearHistoryRequest: (context, random) => identity(context, random),
  FeedbackRequest: (context, random) => ({
    run_id: context.runIds.length && random.chance(0.8) ? random.pick(context.runIds) : randomUUID(),
    key: random.pick(["helpful", "accuracy"]),
    score: random.pick([0, 1, 0.5, -1]),
    ...(random.chance(0.3) ? { comment: "nice" } : {}),
    ...(random.chance(0.3) ? { kwargs: { comment: "nice", source: "ui" } } : {}),
    ...(random.chance(0.2) ? { rating_context: { screen: "chat" } } : {}),
  }),
};

/** A body for the request schema `schemaId`: valid when a maker knows it, schema-shaped otherwise. */
export function validBody(schemaId: string, context: BodyContext, random: Random): unknown {
  const maker = makers[schemaId];
  if (maker) return maker(context, random);
  const schema = context.document.components.schemas[schemaId];
  return schema ? exampleOf(context.document, schema, random) : {};
}

/** A body generated from the schema alone (variety beyond the hand-written makers). */
export function schemaBody(schemaId: string, context: BodyContext, random: Random): unknown {
  const schema = context.document.components.schemas[schemaId];
  return schema ? exampleOf(context.document, schema, random) : {};
}
