// The agents in this process, with a scripted model in place of a provider: no key, no network.
import assert from "node:assert/strict";
import { test } from "node:test";
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { assistantGraph, chatGraph } from "../src/agents.ts";
import { currentTime } from "../src/tools.ts";

test("chat answers with the model's reply", async () => {
  const model = fakeModel().respond(new AIMessage("Hello! How can I help?"));
  const state = await chatGraph(model).invoke({ messages: [new HumanMessage("Hi")] });
  assert.equal(state.messages.at(-1)?.content, "Hello! How can I help?");
  assert.equal(model.callCount, 1);
});

test("the assistant calls current_time and answers from its result", async () => {
  const model = fakeModel()
    .respondWithTools([{ name: "current_time", args: { time_zone: "Asia/Tokyo" }, id: "call-1" }])
    .respond(new AIMessage("It is evening in Tokyo."));
  const state = await assistantGraph(model).invoke({ messages: [new HumanMessage("What time is it in Tokyo?")] });
  const toolAnswer = state.messages.find((message) => ToolMessage.isInstance(message));
  assert.match(String(toolAnswer?.content), /^\d{4}-\d{2}-\d{2} \d{2}:\d{2} in Asia\/Tokyo$/);
  assert.equal(state.messages.at(-1)?.content, "It is evening in Tokyo.");
  // The model's second call saw the tool's answer.
  assert.ok(model.calls[1]?.messages.some((message) => ToolMessage.isInstance(message)));
});

test("current_time answers an unknown time zone in words the model can act on", async () => {
  assert.match(await currentTime.invoke({ time_zone: "Mars/Olympus" }), /^Unknown time zone "Mars\/Olympus"/);
});
