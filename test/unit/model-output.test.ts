// How a model's answer is reported: finish reasons from each provider's vocabulary in OpenAI's, the
// refusal text, and content blocks converted to LangChain's standard blocks and back.
import assert from "node:assert/strict";
import { test } from "node:test";
import { toApiBlocks, toLangChainBlocks } from "../../src/models/content-blocks.ts";
import { DEFAULT_REFUSAL_TEXT, normalizeCompletion } from "../../src/models/finish-reason.ts";

function normalized(metadata: Record<string, unknown>, kwargs: Record<string, unknown> = {}, content = "") {
  const out = { ...metadata };
  normalizeCompletion(out, kwargs, () => content);
  return out;
}

test("each provider's stop reason becomes OpenAI's word", () => {
  const cases: Array<[Record<string, unknown>, Record<string, unknown>, string]> = [
    [{ finish_reason: "length" }, {}, "length"],
    [{ stop_reason: "max_tokens" }, {}, "length"],
    [{ finishReason: "MAX_TOKENS" }, {}, "length"],
    [{ stop_reason: "end_turn" }, {}, "stop"],
    [{ stop_reason: "stop_sequence" }, {}, "stop"],
    [{ finishReason: "STOP" }, {}, "stop"],
    [{ stop_reason: "tool_use" }, {}, "tool_calls"],
    [{ finishReason: "SAFETY" }, {}, "content_filter"],
    [{ finishReason: "PROHIBITED_CONTENT" }, {}, "content_filter"],
    [{}, { stop_reason: "end_turn" }, "stop"],
    [{}, { finishReason: "RECITATION" }, "content_filter"],
  ];
  for (const [metadata, kwargs, expected] of cases) {
    assert.equal(normalized(metadata, kwargs).finish_reason, expected, JSON.stringify([metadata, kwargs]));
  }
});

test("an unknown reason is kept as it is; without a reason nothing is added or changed", () => {
  assert.equal(normalized({ finish_reason: "something_new" }).finish_reason, "something_new");
  assert.deepEqual(normalized({}), {});
  assert.deepEqual(normalized({ finish_reason: "" }), { finish_reason: "" });
  assert.deepEqual(normalized({ finish_reason: 3 }), { finish_reason: 3 });
  assert.deepEqual(normalized({ finish_reason: "" }, { stop_reason: "max_tokens" }), { finish_reason: "length" }, "an empty reason is no reason");
});

test("the first place that has a reason wins: finish_reason, stop_reason, then the streamed kwargs, then Gemini's", () => {
  assert.equal(normalized({ finish_reason: "stop", stop_reason: "max_tokens" }).finish_reason, "stop");
  assert.equal(normalized({ stop_reason: "max_tokens" }, { stop_reason: "end_turn" }).finish_reason, "length");
  assert.equal(normalized({ finishReason: "SAFETY" }, { stop_reason: "end_turn" }).finish_reason, "stop");
  assert.equal(normalized({}, { stop_reason: "tool_use", finishReason: "STOP" }).finish_reason, "tool_calls");
});

test("a refusal: OpenAI's refusal field, or Anthropic's refusal stop reason with the content or a fixed sentence", () => {
  assert.equal(normalized({ refusal: "I can't help with that." }).refusal, "I can't help with that.");
  assert.equal(normalized({}, { refusal: "No." }).refusal, "No.");
  const anthropic = normalized({ stop_reason: "refusal" }, {}, "I won't do that.");
  assert.deepEqual(anthropic, { stop_reason: "refusal", finish_reason: "content_filter", refusal: "I won't do that." });
  assert.equal(normalized({ stop_reason: "refusal" }).refusal, DEFAULT_REFUSAL_TEXT);
  assert.equal("refusal" in normalized({ finish_reason: "stop" }, {}, "fine"), false);
  assert.deepEqual(normalized({ refusal: "" }), { refusal: "" });
});

test("API content blocks become LangChain's standard blocks", () => {
  assert.deepEqual(
    toLangChainBlocks([
      { type: "text", text: "What is this?" },
      { type: "image", url: "https://example.com/a.png" },
      { type: "image", base64: "aGk=", mime_type: "image/png", filename: "a.png" },
      { type: "file", base64: "JVBERg==", mime_type: "application/pdf" },
      { type: "file", url: "https://example.com/r.pdf", filename: "r.pdf" },
      { type: "audio", base64: "UklGRg==", mime_type: "audio/wav" },
    ]),
    [
      { type: "text", text: "What is this?" },
      { type: "image", url: "https://example.com/a.png" },
      { type: "image", data: "aGk=", mimeType: "image/png", metadata: { filename: "a.png" } },
      { type: "file", data: "JVBERg==", mimeType: "application/pdf", metadata: { filename: "attachment" } },
      { type: "file", url: "https://example.com/r.pdf", metadata: { filename: "r.pdf" } },
      { type: "audio", data: "UklGRg==", mimeType: "audio/wav" },
    ],
  );
});

test("blocks read back become API blocks again; other blocks and values pass through", () => {
  const api = [
    { type: "image", base64: "aGk=", mime_type: "image/png", filename: "a.png" },
    { type: "file", url: "https://example.com/r.pdf", filename: "r.pdf" },
    { type: "text", text: "hi" },
  ] as const;
  assert.deepEqual(toApiBlocks(toLangChainBlocks(api)), api);
  assert.deepEqual(toApiBlocks([{ type: "reasoning", reasoning: "…", data: "kept" }]), [{ type: "reasoning", reasoning: "…", data: "kept" }]);
  assert.deepEqual(toApiBlocks(["plain", 4, null]), [
    { type: "text", text: "plain" },
    { type: "text", text: "4" },
    { type: "text", text: "null" },
  ]);
  // base64 already present is not overwritten; metadata without a filename stays.
  assert.deepEqual(toApiBlocks([{ type: "image", data: "x", base64: "y", metadata: { detail: "high" } }]), [
    { type: "image", data: "x", base64: "y", metadata: { detail: "high" } },
  ]);
});

test("the content's text is asked for only when a refusal needs it", () => {
  const untouched = () => assert.fail("the content's text was asked for");
  const out: Record<string, unknown> = { finish_reason: "stop" };
  normalizeCompletion(out, {}, untouched);
  assert.equal(out.finish_reason, "stop");
  const refused: Record<string, unknown> = { stop_reason: "refusal" };
  normalizeCompletion(refused, {}, () => "I cannot help with that.");
  assert.equal(refused.refusal, "I cannot help with that.");
});
