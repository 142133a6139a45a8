// A conversation started without thread_id is locked like any other (issue 29, item 2). Its id is
// fresh, but the conversation list shows it as soon as the run stores its input; a run or an append
// on it while the first run goes on must be refused (THREAD_QUEUE_TIMEOUT 0: 409 conversation_busy),
// never accepted and then overwritten by the first run's later checkpoints. On every backend.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { call, startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";
import { waitFor } from "../helpers/raw-http.ts";
import { memoryBackend, postgresBackend, sqliteBackend, type BackendUnderTest } from "./history-backends.ts";

const AGENTS = JSON.stringify(["./test/fixtures/run-control-agents.ts:stepsAgent"]);

interface ThreadPage {
  threads: Array<{ thread_id: string; message_count: number }>;
}

async function historyOf(service: RunningService, thread: string): Promise<string[]> {
  const res = await call(service, "GET", `/steps-agent/history?thread_id=${thread}`);
  assert.equal(res.status, 200);
  const page = (await res.json()) as { messages: Array<{ content: unknown }> };
  return page.messages.map((message) => String(message.content));
}

for (const makeBackend of [memoryBackend, sqliteBackend, postgresBackend]) {
  const backend: BackendUnderTest = makeBackend();
  describe(`a new conversation's run holds its lock (${backend.name})`, () => {
    let service: RunningService;
    before(async () => {
      service = await startService({ ...backend.env, AGENT_PATHS: AGENTS, AUTH_SECRET: TEST_TOKEN, THREAD_QUEUE_TIMEOUT: "0" });
    });
    after(async () => {
      await service.close();
      await backend.cleanup();
    });

    test("a run and an append racing the run that created the conversation are refused, and nothing is lost", async () => {
      // Two checkpointed steps, then a wait that only the cancel below ends.
      const first = call(service, "POST", "/steps-agent/invoke", { input: { message: "go" }, agent_config: { steps: 2, sleep_ms: 60_000 } });
      let thread = "";
      await waitFor(async () => {
        const page = (await (await call(service, "GET", "/steps-agent/threads")).json()) as ThreadPage;
        const listed = page.threads.find((entry) => entry.message_count >= 3);
        if (listed) thread = listed.thread_id;
        return listed !== undefined;
      }, "the new conversation listed with its two steps");

      const appended = await call(service, "POST", "/steps-agent/history/add_messages", {
        thread_id: thread,
        messages: [{ type: "human", content: "written beside the run" }],
      });
      assert.equal(appended.status, 409);
      assert.equal(((await appended.json()) as { error_code: string }).error_code, "conversation_busy");
      const second = await call(service, "POST", "/steps-agent/invoke", { input: { message: "second" }, thread_id: thread, agent_config: { steps: 1 } });
      assert.equal(second.status, 409);
      assert.equal(((await second.json()) as { error_code: string }).error_code, "conversation_busy");

      const cancel = await call(service, "POST", "/steps-agent/cancel", { thread_id: thread });
      assert.deepEqual(((await cancel.json()) as { cancelled: boolean }).cancelled, true);
      assert.equal((await first).status, 409);

      // Free now: a write is kept, and the first run's steps are all there.
      const later = await call(service, "POST", "/steps-agent/history/add_messages", {
        thread_id: thread,
        messages: [{ type: "human", content: "written after the run" }],
      });
      assert.equal(later.status, 201);
      assert.deepEqual(await historyOf(service, thread), ["go", "step 1", "step 2", "written after the run"]);
    });
  });
}
