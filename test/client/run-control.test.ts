// The client's cancel, its streams that resume by themselves after a dropped connection, and the
// request and run ids on its errors, against the real service (in this process, memory storage)
// behind a TCP proxy that cuts connections.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { AgentClient, AgentClientError, type ChatMessage, type StreamItem } from "../../src/client/index.ts";
import { waitFor } from "../helpers/raw-http.ts";
import { startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";
import { TcpProxy } from "../helpers/tcp-proxy.ts";

const AGENTS = JSON.stringify(["./test/fixtures/run-control-agents.ts:stepsAgent"]);

describe("client: cancel and resumable streams", () => {
  let service: RunningService;
  let proxy: TcpProxy;
  let client: AgentClient;
  before(async () => {
    service = await startService({ AGENT_PATHS: AGENTS });
    proxy = new TcpProxy(Number(new URL(service.url).port));
    await proxy.start();
    client = new AgentClient({ baseUrl: `http://127.0.0.1:${proxy.port}`, authSecret: TEST_TOKEN, agent: "steps-agent" });
  });
  after(async () => {
    await proxy.stop();
    await service.close();
  });

  const stepsDone = (thread: string, count: number) =>
    waitFor(async () => (await client.getHistory({ thread_id: thread })).total === count, `${count} messages in ${thread}`);

  test("cancel stops a running invoke, whose error carries the run and request ids", async () => {
    const thread = randomUUID();
    const running = client.invoke("go", { thread_id: thread, agent_config: { steps: 2, sleep_ms: 60_000 } });
    const failed = running.then(
      () => assert.fail("the invoke should have been cancelled"),
      (error: unknown) => error,
    );
    await stepsDone(thread, 3);
    const result = await client.cancel({ thread_id: thread });
    assert.equal(result.cancelled, true);
    assert.equal(result.thread_id, thread);
    const error = await failed;
    assert.ok(error instanceof AgentClientError);
    assert.equal(error.statusCode, 409);
    assert.equal(error.errorCode, "run_cancelled");
    assert.equal(error.runId, result.run_id);
    assert.ok(error.requestId);

    assert.deepEqual(await client.cancel({ thread_id: thread }), { thread_id: thread, cancelled: false, run_id: null });
  });

  test("a cancelled stream fails with run_cancelled and names its run", async () => {
    const thread = randomUUID();
    const items: StreamItem[] = [];
    const consumed = (async () => {
      for await (const item of client.stream("go", { thread_id: thread, stream_tokens: false, agent_config: { steps: 1, sleep_ms: 60_000 } })) items.push(item);
    })().then(
      () => assert.fail("the stream should have failed"),
      (error: unknown) => error,
    );
    await stepsDone(thread, 2);
    const { run_id } = await client.cancel({ thread_id: thread });
    const error = await consumed;
    assert.ok(error instanceof AgentClientError);
    assert.equal(error.kind, "event");
    assert.equal(error.errorCode, "run_cancelled");
    assert.equal(error.runId, run_id);
    assert.equal(items.length, 1);
  });

  for (const protocol of ["SSE", "JSON Lines"] as const) {
    test(`a resumable ${protocol} stream picks up after the connection is cut, with no event lost or repeated`, async () => {
      const thread = randomUUID();
      const options = { thread_id: thread, stream_tokens: false, resumable: true, agent_config: { steps: 4, gap_ms: 50, sleep_ms: 200 } };
      const stream = protocol === "SSE" ? client.stream("go", options) : client.streamJsonl("go", options);
      const contents: string[] = [];
      const acceptedBefore = proxy.accepted;
      for await (const item of stream) {
        contents.push(String((item as ChatMessage).content));
        // Cut every connection after the first event: the client reconnects through the proxy.
        if (contents.length === 1) proxy.reset();
      }
      assert.deepEqual(contents, ["step 1", "step 2", "step 3", "step 4", "finished"]);
      assert.ok(proxy.accepted > acceptedBefore, "the client opened a new connection to resume");
    });
  }

  test("a resumable stream without a thread_id gets one from the client", async () => {
    const items: StreamItem[] = [];
    for await (const item of client.stream("go", { stream_tokens: false, resumable: true, agent_config: { steps: 1 } })) items.push(item);
    const threads = new Set(items.map((item) => (item as ChatMessage).thread_id));
    assert.equal(threads.size, 1);
    assert.match(String([...threads][0]), /^[0-9a-f-]{36}$/);
  });
});
