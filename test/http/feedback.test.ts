// Feedback proofs on run responses (invoke, SSE, JSON Lines) and the feedback route's proof rules.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { signFeedbackProof } from "../../src/auth/feedback-proof.ts";
import { call, startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";

const SIGNING = "feedback-signing-secret-0123456789abcdef";
const users = { alice: "alice-token-0123456789", bob: "bob-token-0123456789" };
const AGENT = "chatbot-agent";

type Message = { type: string; run_id: string; thread_id: string; feedback_token?: string; tool_calls: unknown[] };

/** The final message of a run over each protocol. */
async function finalMessage(service: RunningService, protocol: "invoke" | "sse" | "jsonl", token: string, body: Record<string, unknown> = {}): Promise<Message> {
  const request = { input: { message: "hello" }, thread_id: `t-${protocol}`, ...body };
  if (protocol === "invoke") {
    const res = await call(service, "POST", `/${AGENT}/invoke`, request, token);
    assert.equal(res.status, 200);
    return (await res.json()) as Message;
  }
  const path = protocol === "sse" ? `/${AGENT}/stream` : `/${AGENT}/stream/jsonl`;
  const res = await call(service, "POST", path, { ...request, stream_tokens: true }, token);
  assert.equal(res.status, 200);
  const text = await res.text();
  const frames =
    protocol === "sse"
      ? text.split("\n").filter((l) => l.startsWith("data: ") && l !== "data: [DONE]").map((l) => JSON.parse(l.slice(6)) as { type: string; content: unknown })
      : text.split("\n").filter(Boolean).map((l) => JSON.parse(l) as { type: string; content: unknown });
  if (protocol === "sse") assert.ok(text.includes("data: [DONE]"));
  const messages = frames.filter((f) => f.type === "message").map((f) => f.content as Message);
  assert.ok(messages.length > 0, text);
  for (const message of messages.slice(0, -1)) assert.equal(message.feedback_token, undefined, "only the final message carries the proof");
  return messages.at(-1)!;
}

describe("feedback proofs on runs", () => {
  let service: RunningService;
  before(async () => {
    service = await startService({ AUTH_MODE: "token", AUTH_USERS: JSON.stringify(users), FEEDBACK_SIGNING_SECRET: SIGNING });
  });
  after(() => service.close());

  for (const protocol of ["invoke", "sse", "jsonl"] as const) {
    test(`the final AI message of ${protocol} carries a proof binding user, agent and run`, async () => {
      const message = await finalMessage(service, protocol, users.alice);
      assert.equal(message.type, "ai");
      assert.match(message.feedback_token ?? "", /^v1\.[0-9a-f]{64}$/);
      assert.equal(message.feedback_token, signFeedbackProof(SIGNING, "alice", AGENT, message.run_id));
      // The shared secret in token mode is a non-trusted principal too (the service user).
      const shared = await finalMessage(service, protocol, TEST_TOKEN);
      assert.equal(shared.feedback_token, signFeedbackProof(SIGNING, "service", AGENT, shared.run_id));
    });
  }

  test("history never carries proofs", async () => {
    await finalMessage(service, "invoke", users.alice, { thread_id: "proofless" });
    const res = await call(service, "GET", `/${AGENT}/history?thread_id=proofless`, undefined, users.alice);
    const page = (await res.json()) as { messages: Message[] };
    assert.equal(page.messages.length, 2);
    for (const message of page.messages) assert.equal(message.feedback_token, undefined);
  });
});

describe("no proofs without a signing secret, or for the trusted shared secret", () => {
  test("token users still run when FEEDBACK_SIGNING_SECRET is unset, and feedback answers 503", async () => {
    const service = await startService({ AUTH_MODE: "token", AUTH_USERS: JSON.stringify(users) });
    try {
      for (const protocol of ["invoke", "sse", "jsonl"] as const) {
        const message = await finalMessage(service, protocol, users.alice);
        assert.equal(message.feedback_token, undefined);
      }
      const res = await call(service, "POST", `/${AGENT}/feedback`, { run_id: randomUUID(), key: "thumbs", score: 1, feedback_token: "v1.00" }, users.alice);
      assert.equal(res.status, 503);
      assert.equal(((await res.json()) as { error_code: string }).error_code, "feedback_signing_unavailable");
    } finally {
      await service.close();
    }
  });

  test("trusted shared secret: no proof on responses, feedback accepted without one", async () => {
    const service = await startService({ FEEDBACK_SIGNING_SECRET: SIGNING });
    try {
      for (const protocol of ["invoke", "sse", "jsonl"] as const) {
        assert.equal((await finalMessage(service, protocol, TEST_TOKEN)).feedback_token, undefined);
      }
      const res = await call(service, "POST", "/feedback", { run_id: randomUUID(), key: "thumbs", score: 1, user_id: "anyone", comment: "fine" });
      assert.equal(res.status, 201);
      const body = (await res.json()) as { feedback_id: string; delivery: string };
      assert.equal(body.delivery, "skipped");
      assert.match(body.feedback_id, /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    } finally {
      await service.close();
    }
  });
});

describe("feedback route proof checks", () => {
  let service: RunningService;
  let run: Message;
  before(async () => {
    service = await startService({ AUTH_MODE: "token", AUTH_USERS: JSON.stringify(users), FEEDBACK_SIGNING_SECRET: SIGNING });
    run = await finalMessage(service, "invoke", users.alice);
  });
  after(() => service.close());

  const send = (body: Record<string, unknown>, token = users.alice, agent = AGENT) => call(service, "POST", `/${agent}/feedback`, body, token);

  test("the run's own proof is accepted (201)", async () => {
    const res = await send({ run_id: run.run_id, key: "thumbs", score: 1, feedback_token: run.feedback_token, comment: "good", source: "test" });
    assert.equal(res.status, 201);
    const body = (await res.json()) as Record<string, unknown>;
    assert.equal(body.run_id, run.run_id);
    assert.equal(body.key, "thumbs");
    // Naming oneself is fine too.
    assert.equal((await send({ run_id: run.run_id, key: "k", score: 0, user_id: "alice", feedback_token: run.feedback_token })).status, 201);
  });

  test("every forged proof answers 403", async () => {
    const proof = run.feedback_token!;
    const flipped = proof.slice(0, -1) + (proof.endsWith("0") ? "1" : "0");
    const cases: Array<[string, Record<string, unknown>, string?, string?]> = [
      ["missing", { run_id: run.run_id, key: "k", score: 1 }],
      ["altered", { run_id: run.run_id, key: "k", score: 1, feedback_token: flipped }],
      ["truncated", { run_id: run.run_id, key: "k", score: 1, feedback_token: proof.slice(0, 20) }],
      ["garbage", { run_id: run.run_id, key: "k", score: 1, feedback_token: "not-a-proof" }],
      ["another run", { run_id: randomUUID(), key: "k", score: 1, feedback_token: proof }],
      ["another user's proof", { run_id: run.run_id, key: "k", score: 1, feedback_token: signFeedbackProof(SIGNING, "bob", AGENT, run.run_id) }],
      ["presented by another user", { run_id: run.run_id, key: "k", score: 1, feedback_token: proof }, users.bob],
      ["another agent", { run_id: run.run_id, key: "k", score: 1, feedback_token: proof }, users.alice, "create-agent"],
      ["signed with another secret", { run_id: run.run_id, key: "k", score: 1, feedback_token: signFeedbackProof("x".repeat(40), "alice", AGENT, run.run_id) }],
      ["shared secret without proof", { run_id: run.run_id, key: "k", score: 1 }, TEST_TOKEN],
    ];
    for (const [name, body, token, agent] of cases) {
      const res = await send(body, token, agent);
      assert.equal(res.status, 403, name);
      const error = (await res.json()) as { error_code: string };
      assert.match(error.error_code, /^feedback_proof_(required|invalid)$/, name);
    }
  });

  test("naming another user is 403 before any proof is looked at", async () => {
    const res = await send({ run_id: run.run_id, key: "k", score: 1, user_id: "bob", feedback_token: run.feedback_token });
    assert.equal(res.status, 403);
    assert.equal(((await res.json()) as { error_code?: string }).error_code, "forbidden_user");
  });

  test("invalid bodies answer 422", async () => {
    for (const body of [
      { key: "k", score: 1 },
      { run_id: "", key: "k", score: 1 },
      { run_id: run.run_id, score: 1 },
      { run_id: run.run_id, key: "k", score: "high" },
      { run_id: run.run_id, key: "", score: 1 },
    ]) {
      assert.equal((await send({ ...body, feedback_token: run.feedback_token })).status, 422, JSON.stringify(body));
    }
  });
});
