import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { call, startService, type RunningService } from "../helpers/service.ts";
import { run, type Outcome } from "../fixtures/providers/events.ts";

/** Interrupts and resume over real HTTP: invoke, SSE and JSON Lines, approvals, identity and conflicts. */

const ROOT = path.resolve(import.meta.dirname, "../..");
const INTERRUPTS = path.join(ROOT, "test/fixtures/interrupt-agents.ts");
const DEEP = path.join(ROOT, "test/fixtures/deep-agent-scripted.ts");

type Pending = Array<{ id: string; value: unknown }>;
type Message = Record<string, unknown> & { type: string; custom_data?: { interrupts?: Pending } };

/** The interrupts a paused run reports: an `ai` message with `custom_data.interrupts`. */
function pendingOf(message: Message): Pending {
  assert.equal(message.type, "ai");
  return message.custom_data?.interrupts ?? [];
}

function lastMessage(outcome: Outcome): Message {
  if (outcome.body) return outcome.body as Message;
  const messages = outcome.events.filter((e) => e.type === "message");
  return messages.at(-1)!.content as Message;
}

describe("interrupts and resume", { concurrency: false }, () => {
  let service: RunningService;

  before(async () => {
    service = await startService({
      AGENT_PATHS: JSON.stringify([`${INTERRUPTS}:askName`, `${INTERRUPTS}:twoQuestions`, `${DEEP}:scriptedDeepAgent`]),
      DEEP_AGENT_INTERRUPT_ON: "write_file,edit_file",
      AUTH_USERS: JSON.stringify({ alice: "alice-token" }),
    });
  });
  after(async () => service?.close());

  test("invoke returns an interrupt message; resume continues; a second resume is 409", async () => {
    const paused = await run(service, "invoke", "ask-name", { input: { message: "Hi" }, thread_id: "t-invoke" });
    assert.equal(paused.status, 200);
    const message = lastMessage(paused);
    assert.equal(message.content, "What is your name?");
    assert.equal(message.thread_id, "t-invoke");
    const pending = pendingOf(message);
    assert.equal(pending.length, 1);
    assert.match(pending[0]!.id, /^[0-9a-f]{32}$/);
    assert.equal(pending[0]!.value, "What is your name?");

    // The history's first page lists what the paused run waits for, so a reader that reloads can answer it.
    const read = async (query: string) => (await (await call(service, "GET", `/ask-name/history?thread_id=t-invoke${query}`)).json()) as {
      messages: Message[];
      interrupts?: Pending;
    };
    const first = await read("");
    assert.deepEqual(first.interrupts, pending);
    assert.deepEqual(first.messages.map((m) => m.type), ["human"], "the interrupt is not a stored message");
    assert.equal((await read("&offset=1")).interrupts, undefined, "only the first page lists them");

    const resumed = await run(service, "invoke", "ask-name", { thread_id: "t-invoke", resume: "Ada" }, "resume");
    assert.equal(resumed.status, 200, resumed.text);
    assert.equal(lastMessage(resumed).type, "ai");
    assert.equal(lastMessage(resumed).custom_data, undefined, "no longer paused");
    assert.equal(lastMessage(resumed).content, "Hello, Ada!");

    const again = await run(service, "invoke", "ask-name", { thread_id: "t-invoke", resume: "Bob" }, "resume");
    assert.equal(again.status, 409);
    assert.equal(again.body?.error_code, "no_pending_interrupt");
    assert.match(String(again.body?.detail), /"t-invoke" has no pending interrupt/);
    assert.equal((await read("")).interrupts, undefined, "nothing pending after the resume");
  });

  for (const protocol of ["sse", "jsonl"] as const) {
    test(`${protocol}: the stream ends with an interrupt message; resume streams the rest`, async () => {
      const thread_id = `t-${protocol}`;
      const paused = await run(service, protocol, "ask-name", { input: { message: "Hi" }, thread_id });
      assert.equal(paused.status, 200);
      const last = paused.events.at(-1)!;
      assert.equal(last.type, "message");
      assert.equal(pendingOf(last.content as Message).length, 1);
      if (protocol === "sse") assert.ok(paused.done, "a paused run is a clean end: [DONE]");

      const resumed = await run(service, protocol, "ask-name", { thread_id, resume: "Grace", stream_tokens: false }, "resume");
      assert.equal(resumed.status, 200);
      assert.deepEqual(
        resumed.events.map((e) => [e.type, (e.content as Message).type, (e.content as Message).content]),
        [["message", "ai", "Hello, Grace!"]],
      );
    });
  }

  test("an interrupt_id that is not pending is 409; with several pending the caller must name one", async () => {
    const paused = await run(service, "invoke", "two-questions", { input: { message: "Hi" }, thread_id: "t-two" });
    const pending = pendingOf(lastMessage(paused));
    assert.equal(pending.length, 2);
    assert.deepEqual(pending.map((p) => (p.value as { question: string }).question).sort(), ["Favourite colour?", "Favourite number?"]);

    const unnamed = await run(service, "invoke", "two-questions", { thread_id: "t-two", resume: "x" }, "resume");
    assert.equal(unnamed.status, 409);
    assert.equal(unnamed.body?.error_code, "interrupt_not_pending");
    assert.match(String(unnamed.body?.detail), /Several interrupts are pending/);

    const wrong = await run(service, "invoke", "two-questions", { thread_id: "t-two", resume: "x", interrupt_id: "0".repeat(32) }, "resume");
    assert.equal(wrong.status, 409);
    assert.equal(wrong.body?.error_code, "interrupt_not_pending");
    assert.match(String(wrong.body?.detail), new RegExp(`Interrupt "${"0".repeat(32)}" is not pending`));

    const colour = pending.find((p) => (p.value as { question: string }).question === "Favourite colour?")!;
    const number = pending.find((p) => p !== colour)!;
    const first = await run(service, "invoke", "two-questions", { thread_id: "t-two", resume: "green", interrupt_id: colour.id }, "resume");
    assert.equal(first.status, 200, first.text);
    const still = lastMessage(first);
    assert.deepEqual(pendingOf(still).map((p) => p.id), [number.id], "the other question is still open");
    assert.equal(still.content, "Favourite number?");

    const second = await run(service, "invoke", "two-questions", { thread_id: "t-two", resume: 7, interrupt_id: number.id }, "resume");
    assert.equal(second.status, 200, second.text);
    assert.equal(lastMessage(second).type, "ai");
    assert.equal(lastMessage(second).custom_data, undefined, "no longer paused");
    const key = (await import("../../src/auth/storage-key.ts")).storageKey("service", "two-questions", "t-two");
    const state = await service.runtime.registry.get("two-questions")!.graph.getState({ configurable: { thread_id: key } });
    const texts = (state.values as { messages: Array<{ text: string }> }).messages.map((m) => m.text);
    assert.ok(texts.includes("Colour: green") && texts.includes("Number: 7"), texts.join(" | "));
  });

  test("resume validates its body and answers 409 for a conversation that never paused", async () => {
    const invalid: Array<Record<string, unknown>> = [
      { resume: "x" },
      { thread_id: "t-x" },
      { thread_id: "t-x", resume: null },
      { thread_id: "t-x", resume: "x", input: { message: "no" } },
    ];
    for (const body of invalid) {
      const outcome = await run(service, "invoke", "ask-name", body, "resume");
      assert.equal(outcome.status, 422, JSON.stringify(body));
    }
    for (const protocol of ["invoke", "sse", "jsonl"] as const) {
      const outcome = await run(service, protocol, "ask-name", { thread_id: "never-started", resume: "x" }, "resume");
      assert.equal(outcome.status, 409, `${protocol}: no stream is opened for a conflict`);
      assert.equal(outcome.body?.error_code, "no_pending_interrupt");
    }
    const noToken = await call(service, "POST", "/ask-name/resume", { thread_id: "t-x", resume: "x" }, null);
    assert.equal(noToken.status, 401);
  });

  test("identity is computed: another user cannot resume, and a different identity finds nothing pending", async () => {
    const alice = (pathname: string, body: unknown) => call(service, "POST", pathname, body, "alice-token");
    const paused = await alice("/ask-name/invoke", { input: { message: "Hi" }, thread_id: "t-alice" });
    assert.equal(pendingOf((await paused.json()) as Message).length, 1);

    const asBob = await alice("/ask-name/resume", { thread_id: "t-alice", user_id: "bob", resume: "x" });
    assert.equal(asBob.status, 403);
    // The shared token without user_id acts for the service user: a different conversation.
    const shared = await call(service, "POST", "/ask-name/resume", { thread_id: "t-alice", resume: "x" });
    assert.equal(shared.status, 409);
    const own = await alice("/ask-name/resume", { thread_id: "t-alice", resume: "Alice" });
    assert.equal(((await own.json()) as Message).content, "Hello, Alice!");
  });

  test("two resumes at once: the conversation lock lets one through", async () => {
    await run(service, "invoke", "ask-name", { input: { message: "Hi" }, thread_id: "t-race" });
    const outcomes = await Promise.all(
      ["one", "two"].map((name) => run(service, "invoke", "ask-name", { thread_id: "t-race", resume: name }, "resume")),
    );
    assert.deepEqual(outcomes.map((o) => o.status).sort(), [200, 409]);
  });

  test("deep-agent approvals of write_file and edit_file (DEEP_AGENT_INTERRUPT_ON)", async () => {
    const thread_id = "t-approve";
    const first = lastMessage(await run(service, "invoke", "scripted-deep-agent", { input: { message: "Note it." }, thread_id }));
    assert.equal(first.content, "Approval needed before running write_file.");
    const request = pendingOf(first)[0]!.value as { actionRequests: Array<{ name: string; args: Record<string, unknown> }> };
    assert.equal(request.actionRequests[0]!.name, "write_file");
    assert.equal(request.actionRequests[0]!.args.content, "hello world\n");

    const approve = { decisions: [{ type: "approve" }] };
    const second = lastMessage(await run(service, "invoke", "scripted-deep-agent", { thread_id, resume: approve }, "resume"));
    assert.equal(pendingOf(second).length, 1);
    assert.equal(second.content, "Approval needed before running edit_file.");

    const reject = { decisions: [{ type: "reject", message: "Keep the note as it is." }] };
    const done = await run(service, "sse", "scripted-deep-agent", { thread_id, resume: reject, stream_tokens: false }, "resume");
    const final = lastMessage(done);
    assert.equal(final.type, "ai");
    assert.equal(final.custom_data, undefined, "no longer paused");
    const key = (await import("../../src/auth/storage-key.ts")).storageKey("service", "scripted-deep-agent", thread_id);
    const state = await service.runtime.registry.get("scripted-deep-agent")!.graph.getState({ configurable: { thread_id: key } });
    const file = (state.values as { files: Record<string, { content: unknown }> }).files["/notes.md"];
    assert.match(JSON.stringify(file?.content), /hello world/, "the rejected edit did not happen");
  });

  test("the OpenAPI document describes the resume operations and the interrupt message", async () => {
    const response = await call(service, "GET", "/openapi.json");
    const document = (await response.json()) as { paths: Record<string, unknown>; components: { schemas: Record<string, { properties?: Record<string, unknown> }> } };
    for (const p of ["/{agent_id}/resume", "/{agent_id}/resume/stream", "/{agent_id}/resume/stream/jsonl", "/resume", "/resume/stream", "/resume/stream/jsonl"]) {
      assert.ok(document.paths[p], p);
    }
    assert.deepEqual(Object.keys(document.components.schemas.ResumeRequest!.properties!).sort(), ["interrupt_id", "resume", "thread_id", "user_id"]);
    assert.ok(document.components.schemas.ChatMessage!.properties!.custom_data);
  });
});

test("CHECK_INTERRUPTS=false: a paused run is not reported as an interrupt", async () => {
  const service = await startService({ AGENT_PATHS: JSON.stringify([`${INTERRUPTS}:askName`]), CHECK_INTERRUPTS: "false" });
  try {
    const outcome = await run(service, "invoke", "ask-name", { input: { message: "Hi" } });
    assert.equal(outcome.status, 200);
    assert.equal(lastMessage(outcome).custom_data, undefined);
  } finally {
    await service.close();
  }
});
