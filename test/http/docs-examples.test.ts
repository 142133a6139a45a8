// The API reference's examples work: every operation of /openapi.json, sent as /docs's "Try it out"
// sends it before anything is typed, to a fresh service with the fake model, is served (2xx) or, where
// it needs a run that cannot exist yet, refused with its own error; never 422. And the reference
// lists the operations in the order a newcomer reads them.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { listed, tryItOut, type ListedOperation, type ReferenceDocument } from "../helpers/api-reference.ts";
import { waitFor } from "../helpers/raw-http.ts";
import { startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";

/** The answers of operations about a run that must exist first: the examples name no real run. */
const NEEDS_A_RUN: Readonly<Record<string, { status: number; code: string }>> = {
  resume: { status: 409, code: "no_pending_interrupt" },
  resumeStream: { status: 409, code: "no_pending_interrupt" },
  resumeStreamJsonl: { status: 409, code: "no_pending_interrupt" },
  runStream: { status: 404, code: "run_events_not_found" },
  runStreamJsonl: { status: 404, code: "run_events_not_found" },
  getRun: { status: 404, code: "run_not_found" },
  joinRun: { status: 404, code: "run_not_found" },
  cancelRun: { status: 404, code: "run_not_found" },
  deleteRun: { status: 404, code: "run_not_found" },
  joinRunStream: { status: 404, code: "run_events_not_found" },
};

/** An operation's id without the default agent's suffix (both forms answer alike). */
const baseId = (operation: ListedOperation) => operation.id.replace(/DefaultAgent$/, "");

interface Sent {
  readonly operation: ListedOperation;
  readonly status: number;
  readonly text: string;
}

/**
 * Every operation in the order the reference lists it, the deletions last and the last listed first
 * (a newcomer deleting the demo thread before trying its runs would see 404s), each sent as it is
 * with `token`.
 */
async function sendEveryExample(service: RunningService, document: ReferenceDocument, token: string): Promise<Sent[]> {
  const operations = listed(document);
  const deletions = operations.filter((operation) => operation.method === "DELETE").reverse();
  const sent: Sent[] = [];
  const send = async (operation: ListedOperation) => {
    const request = tryItOut(document, operation);
    const response = await fetch(service.url + request.url, {
      method: request.method,
      headers: { authorization: `Bearer ${token}`, ...(request.body === undefined ? {} : { "content-type": "application/json" }) },
      body: request.body,
    });
    sent.push({ operation, status: response.status, text: await response.text() });
  };
  for (const operation of operations) if (operation.method !== "DELETE") await send(operation);
  // The background run an example started on the demo thread ends before the thread is deleted.
  await waitFor(async () => {
    const runs = (await (await fetch(`${service.url}/threads/demo-thread/runs`, { headers: { authorization: `Bearer ${token}` } })).json()) as Array<{ status: string }>;
    return runs.every((run) => run.status !== "pending" && run.status !== "running");
  }, "the demo thread's background run to end", 30_000);
  for (const operation of deletions) await send(operation);
  return sent;
}

function assertAnswered(sent: readonly Sent[], refused: Readonly<Record<string, { status: number; code: string }>>): void {
  const problems: string[] = [];
  for (const { operation, status, text } of sent) {
    const name = `${operation.method} ${operation.path} (${operation.id})`;
    const expected = refused[baseId(operation)];
    if (status === 422) problems.push(`${name}: 422 ${text.slice(0, 300)}`);
    else if (expected) {
      const code = (JSON.parse(text) as { error_code?: string }).error_code;
      if (status !== expected.status || code !== expected.code) problems.push(`${name}: ${status} ${code}, expected ${expected.status} ${expected.code}`);
    } else if (status < 200 || status > 299) problems.push(`${name}: ${status} ${text.slice(0, 300)}`);
    // A stream answers 200 before its run; a failed run shows as an error event.
    else if (/"type":"error"|^event: error$/m.test(text)) problems.push(`${name}: the stream reported an error: ${text.slice(0, 300)}`);
  }
  assert.deepEqual(problems, []);
}

describe("the API reference's examples, sent as they are", () => {
  test("with the shared secret of a trusted deployment (the default AUTH_MODE): every one is served or needs a run first", async () => {
    const service = await startService();
    try {
      const document = (await (await fetch(`${service.url}/openapi.json`)).json()) as ReferenceDocument;
      const sent = await sendEveryExample(service, document, TEST_TOKEN);
      assert.ok(sent.length >= 60, `${sent.length} operations`);
      assertAnswered(sent, NEEDS_A_RUN);
      // They did what they say: a run answered, the demo conversation and the Platform thread were used.
      const invoke = sent.find(({ operation }) => operation.id === "invokeDefaultAgent")!;
      assert.equal((JSON.parse(invoke.text) as { thread_id: string }).thread_id, "demo");
      const thread = sent.find(({ operation }) => operation.id === "getThread")!;
      assert.equal((JSON.parse(thread.text) as { thread_id: string }).thread_id, "demo-thread");
      // Feedback from the trusted secret needs no proof: recorded (no observability backend here).
      assert.equal(sent.find(({ operation }) => operation.id === "feedbackDefaultAgent")!.status, 201);
    } finally {
      await service.close();
    }
  });

  test("with a user's token (AUTH_MODE=token): the same, feedback asking for the run's proof", async () => {
    const service = await startService({
      AUTH_MODE: "token",
      AUTH_USERS: JSON.stringify({ ada: "ada-docs-token" }),
      FEEDBACK_SIGNING_SECRET: "docs-examples-feedback-signing-secret-0123",
    });
    try {
      const document = (await (await fetch(`${service.url}/openapi.json`)).json()) as ReferenceDocument;
      const sent = await sendEveryExample(service, document, "ada-docs-token");
      assertAnswered(sent, { ...NEEDS_A_RUN, feedback: { status: 403, code: "feedback_proof_required" } });
    } finally {
      await service.close();
    }
  });

  test("the examples a newcomer meets first name no optional field with a made-up value", async () => {
    const service = await startService();
    try {
      const document = (await (await fetch(`${service.url}/openapi.json`)).json()) as ReferenceDocument;
      const invoke = tryItOut(document, listed(document)[0]!);
      assert.deepEqual(JSON.parse(invoke.body!), { input: { message: "Hello" }, thread_id: "demo" });
      assert.ok(!JSON.stringify(document).includes('"example":"string"'));
    } finally {
      await service.close();
    }
  });
});

describe("the API reference's order", () => {
  let service: RunningService;
  let document: ReferenceDocument;
  before(async () => {
    service = await startService();
    document = (await (await fetch(`${service.url}/openapi.json`)).json()) as ReferenceDocument;
  });
  after(() => service.close());

  test("runs first, then history, feedback, run control, the service; the LangGraph Platform's groups after", () => {
    const operations = listed(document);
    assert.equal(operations.length, Object.values(document.paths).flatMap((item) => Object.keys(item)).length, "every operation is in a listed group");
    const own = operations.filter((operation) => !operation.tag.startsWith("LangGraph Platform"));
    assert.deepEqual(
      own.map(({ method, path }) => `${method} ${path}`),
      [
        "POST /invoke",
        "POST /{agent_id}/invoke",
        "POST /stream",
        "POST /{agent_id}/stream",
        "POST /stream/jsonl",
        "POST /{agent_id}/stream/jsonl",
        "GET /history",
        "GET /{agent_id}/history",
        "GET /threads",
        "GET /{agent_id}/threads",
        "POST /history/add_messages",
        "POST /{agent_id}/history/add_messages",
        "DELETE /history/clear",
        "DELETE /{agent_id}/history/clear",
        "POST /feedback",
        "POST /{agent_id}/feedback",
        "POST /resume",
        "POST /{agent_id}/resume",
        "POST /resume/stream",
        "POST /{agent_id}/resume/stream",
        "POST /resume/stream/jsonl",
        "POST /{agent_id}/resume/stream/jsonl",
        "POST /cancel",
        "POST /{agent_id}/cancel",
        "GET /runs/{run_id}/stream",
        "GET /{agent_id}/runs/{run_id}/stream",
        "GET /runs/{run_id}/stream/jsonl",
        "GET /{agent_id}/runs/{run_id}/stream/jsonl",
        "GET /info",
        "GET /health/ready",
        "GET /health/live",
      ],
    );
    assert.deepEqual([...new Set(own.map((operation) => operation.tag))], ["runs", "history", "feedback", "run control", "service"]);
    // The Platform's operations all come after agenthost's own, in three groups.
    const platform = operations.slice(own.length);
    assert.ok(platform.every((operation) => operation.tag.startsWith("LangGraph Platform")));
    assert.deepEqual(
      [...new Set(platform.map((operation) => operation.tag))],
      ["LangGraph Platform: assistants", "LangGraph Platform: threads", "LangGraph Platform: runs"],
    );
    // Each group starts where a newcomer would: the probe, creating a thread, a run waited for.
    const first = (tag: string) => platform.find((operation) => operation.tag === tag)!;
    assert.equal(first("LangGraph Platform: assistants").id, "ok");
    assert.equal(first("LangGraph Platform: threads").id, "createThread");
    assert.equal(first("LangGraph Platform: runs").id, "threadRunWait");
  });
});
