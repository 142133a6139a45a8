import { test } from "node:test";
import assert from "node:assert/strict";
import { loadConfig } from "../../src/config/load.ts";
import type { RegisteredAgent } from "../../src/agents/agent.ts";
import { prepareRun } from "../../src/runs/prepare.ts";
import { storageKey } from "../../src/auth/storage-key.ts";
import { verifyFeedbackProof } from "../../src/auth/feedback-proof.ts";

const agent = { name: "a", description: "", graph: {} as RegisteredAgent["graph"], supportsModelSelection: false } satisfies RegisteredAgent;
const trusted = { kind: "shared-secret", boundUserId: undefined, needsFeedbackProof: false } as const;
/** The conversation the conversation service would resolve for this user and thread. */
const at = (userId: string, threadId = "t") => ({ agent, userId, threadId, storageKey: storageKey(userId, "a", threadId) });

test("every run carries the configured durability, recursion limit and storage key", () => {
  for (const durability of ["sync", "async"] as const) {
    const config = loadConfig({ AUTH_SECRET: "x", CHECKPOINT_DURABILITY: durability, DEFAULT_RECURSION_LIMIT: "7" });
    const run = prepareRun(config, at("service"), trusted, { input: { message: "hi" }, thread_id: "t" });
    assert.equal(run.graphConfig.durability, durability);
    assert.equal(run.graphConfig.recursionLimit, 7);
    assert.equal(run.graphConfig.configurable?.thread_id, storageKey("service", "a", "t"));
    assert.equal(run.graphConfig.runId, run.runId);
    const bounded = prepareRun(config, at("service"), trusted, { input: { message: "hi" }, recursion_limit: 3 });
    assert.equal(bounded.graphConfig.recursionLimit, 3);
  }
});

test("proofs are made only for principals that need one, and only with a signing secret", () => {
  const secret = "s".repeat(40);
  const tokenUser = { kind: "user-token", boundUserId: "ann", needsFeedbackProof: true } as const;
  const withSecret = loadConfig({ AUTH_SECRET: "x", FEEDBACK_SIGNING_SECRET: secret });
  const run = prepareRun(withSecret, at("ann"), tokenUser, { input: { message: "hi" } });
  assert.ok(run.feedbackToken?.startsWith("v1."));
  assert.ok(verifyFeedbackProof(secret, run.feedbackToken!, "ann", "a", run.runId));
  assert.equal(prepareRun(withSecret, at("service"), trusted, { input: { message: "hi" } }).feedbackToken, undefined);
  assert.equal(prepareRun(loadConfig({ AUTH_SECRET: "x" }), at("ann"), tokenUser, { input: { message: "hi" } }).feedbackToken, undefined);
});

test("attachments beyond MULTIMODAL_MAX_ATTACHMENTS are refused (payload_too_large)", () => {
  const config = loadConfig({ AUTH_SECRET: "x", MULTIMODAL_MAX_ATTACHMENTS: "1" });
  const image = { type: "image" as const, url: "https://example.com/a.png" };
  assert.doesNotThrow(() => prepareRun(config, at("service"), trusted, { input: { message: [{ type: "text", text: "x" }, image] } }));
  assert.throws(() => prepareRun(config, at("service"), trusted, { input: { message: [image, image] } }), (e: { kind?: string }) => e.kind === "payload_too_large");
});
