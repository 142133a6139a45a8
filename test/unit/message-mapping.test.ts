import { test } from "node:test";
import assert from "node:assert/strict";
import { AIMessage, HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";
import { toChatMessage } from "../../src/runs/message-mapping.ts";

const ctx = { threadId: "t", runId: "r" };

test("an empty answer with a refusal carries the refusal text as content", () => {
  const fromKwargs = toChatMessage(new AIMessage({ content: "", additional_kwargs: { refusal: "I can't help with that." } }), ctx);
  assert.equal(fromKwargs.content, "I can't help with that.");
  assert.equal(fromKwargs.response_metadata.refusal, "I can't help with that.");
  const fromMetadata = toChatMessage(new AIMessage({ content: "", response_metadata: { refusal: "No." } }), ctx);
  assert.equal(fromMetadata.content, "No.");
  const withText = toChatMessage(new AIMessage({ content: "Partial", additional_kwargs: { refusal: "No." } }), ctx);
  assert.equal(withText.content, "Partial", "real content is never replaced");
});

test("finish_reason, usage and tool calls pass through; other types map without model fields", () => {
  const ai = toChatMessage(
    new AIMessage({
      content: "",
      tool_calls: [{ id: "c1", name: "add", args: { a: 1, b: 2 } }],
      usage_metadata: { input_tokens: 3, output_tokens: 0, total_tokens: 3 },
      response_metadata: { finish_reason: "length" },
    }),
    ctx,
  );
  assert.deepEqual(ai.tool_calls, [{ id: "c1", name: "add", args: { a: 1, b: 2 }, type: "tool_call" }]);
  assert.deepEqual(ai.usage_metadata, { input_tokens: 3, output_tokens: 0, total_tokens: 3 });
  assert.equal(ai.response_metadata.finish_reason, "length");
  assert.equal(ai.thread_id, "t");
  assert.equal(ai.run_id, "r");

  assert.equal(toChatMessage(new HumanMessage("hi"), ctx).type, "human");
  const system = toChatMessage(new SystemMessage("be brief"), ctx);
  assert.equal(system.type, "custom", "the original's clients accept human, ai, tool and custom only");
  assert.deepEqual(system.custom_data, { message_type: "system" });
  assert.equal(system.content, "be brief");
  const tool = toChatMessage(new ToolMessage({ content: "3", tool_call_id: "c1" }), ctx);
  assert.equal(tool.type, "tool");
  assert.equal(tool.tool_call_id, "c1");
  assert.equal(tool.usage_metadata, null);
});

test("a tool call without an id still carries the key id (null)", () => {
  const ai = toChatMessage(new AIMessage({ content: "", tool_calls: [{ name: "add", args: {} }] }), ctx);
  assert.deepEqual(ai.tool_calls, [{ id: null, name: "add", args: {}, type: "tool_call" }]);
  assert.ok("id" in ai.tool_calls[0]!);
});
