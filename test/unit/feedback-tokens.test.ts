// The chat page's store of feedback proofs: found only for the agent that issued them, bounded, and
// the least recently remembered forgotten first.
import assert from "node:assert/strict";
import { test } from "node:test";
import { FeedbackTokens } from "../../src/ui/feedback-tokens.ts";

test("a proof is found for its run and agent only", () => {
  const tokens = new FeedbackTokens();
  tokens.remember("chatbot-agent", "run-1", "proof-1");
  assert.equal(tokens.lookup("chatbot-agent", "run-1"), "proof-1");
  assert.equal(tokens.lookup("create-agent", "run-1"), undefined);
  assert.equal(tokens.lookup("chatbot-agent", "run-2"), undefined);
});

test("remembering a run again replaces its proof and agent", () => {
  const tokens = new FeedbackTokens();
  tokens.remember("chatbot-agent", "run-1", "old");
  tokens.remember("create-agent", "run-1", "new");
  assert.equal(tokens.size, 1);
  assert.equal(tokens.lookup("create-agent", "run-1"), "new");
  assert.equal(tokens.lookup("chatbot-agent", "run-1"), undefined);
});

test("past the capacity the oldest proofs go first; a remembered-again run counts as new", () => {
  const tokens = new FeedbackTokens(3);
  for (const run of ["a", "b", "c"]) tokens.remember("agent", run, `proof-${run}`);
  tokens.remember("agent", "a", "proof-a2"); // a is now the newest
  tokens.remember("agent", "d", "proof-d");
  assert.equal(tokens.size, 3);
  assert.equal(tokens.lookup("agent", "b"), undefined, "b was the oldest");
  assert.deepEqual(["a", "c", "d"].map((run) => tokens.lookup("agent", run)), ["proof-a2", "proof-c", "proof-d"]);
  for (const run of ["e", "f", "g"]) tokens.remember("agent", run, run);
  assert.equal(tokens.size, 3);
  assert.equal(tokens.lookup("agent", "a"), undefined);
  assert.equal(tokens.lookup("agent", "g"), "g");
});

test("a capacity of 0 keeps nothing", () => {
  const tokens = new FeedbackTokens(0);
  tokens.remember("agent", "run", "proof");
  assert.equal(tokens.size, 0);
  assert.equal(tokens.lookup("agent", "run"), undefined);
});
